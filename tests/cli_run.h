// cli_run.h — run the built `shardscope` command from a test and capture what it printed.
#pragma once

#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <sys/wait.h>

struct CliResult {
    int code = -1;       ///< exit status
    std::string output;  ///< stdout and stderr together
};

/// Runs a shell command line and captures its output (stderr merged into stdout) and exit status.
inline CliResult run_shell(const std::string& cmdline) {
    CliResult r;
    FILE* p = popen((cmdline + " 2>&1").c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf;
    while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.output.append(buf.data(), n);
    int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

/// Runs `shardscope ARGS` (the binary this build made), one BLAS thread.
inline CliResult run_shardscope(const std::string& args) {
    return run_shell(std::string("OPENBLAS_NUM_THREADS=1 ") + SS_SHARDSCOPE_EXE + " " + args);
}
