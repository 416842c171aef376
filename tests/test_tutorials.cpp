// test_tutorials.cpp — every tutorial's commands run, and what they print
// matches what the chapter quotes, so a chapter can never lie.
//
// In tutorials/*.md, a ```console block holds commands and their output:
//
//   $ shardscope train --model tiny --steps 2        <- a command (run from the build folder)
//   model tiny: L=2 C=64 ... 136960 parameters       <- a line it must print
//   step    1/2 | loss 5.5* | * ms | * tok/s         <- '*' matches any text
//   ...                                              <- lines the chapter leaves out
//   [exit 1]                                         <- the exit status it must end with (default 0)
//
// Quoted lines must appear in the command's output in the order quoted. A
// command meant to fail (a chapter on errors) says so with its exit status.
#include <catch2/catch.hpp>

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"

namespace {

struct Command {
    std::string file, cmd;
    std::vector<std::string> expect;
    int code = 0;  // the exit status it must end with
};

bool glob_match(const char* p, const char* s) {
    if (*p == '\0') return *s == '\0';
    if (*p == '*') return glob_match(p + 1, s) || (*s && glob_match(p, s + 1));
    return *s && *p == *s && glob_match(p + 1, s + 1);
}

std::string rtrim(std::string s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
    return s;
}

std::vector<Command> parse(const std::string& path, const std::string& name) {
    std::ifstream f(path);
    std::vector<Command> out;
    std::string line;
    bool in_console = false;
    while (std::getline(f, line)) {
        if (line.rfind("```", 0) == 0) {
            in_console = !in_console && line == "```console";
            continue;
        }
        if (!in_console) continue;
        int code = 0;
        char end = 0;
        if (line.rfind("$ ", 0) == 0) {
            out.push_back({name, line.substr(2), {}});
        } else if (!out.empty() && std::sscanf(line.c_str(), "[exit %d%c", &code, &end) == 2 && end == ']') {
            out.back().code = code;
        } else if (!out.empty() && rtrim(line) != "..." && !rtrim(line).empty()) {
            out.back().expect.push_back(rtrim(line));
        }
    }
    return out;
}

std::vector<std::string> tutorial_files() {
    std::vector<std::string> names;
    std::string dir = std::string(SS_SOURCE_DIR) + "/tutorials";
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            std::string n = e->d_name;
            // The chapters; README.md is the index (its own test below).
            if (n.size() > 3 && n.substr(n.size() - 3) == ".md" && n != "README.md") names.push_back(n);
        }
        closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace

TEST_CASE("the glob matcher used for quoted output", "[tutorials]") {
    REQUIRE(glob_match("loss 5.5*", "loss 5.5452"));
    REQUIRE(glob_match("a * c", "a bbb c"));
    REQUIRE_FALSE(glob_match("loss 4.*", "loss 5.5452"));
}

TEST_CASE("every tutorial command runs and prints what the chapter quotes", "[tutorials]") {
    std::vector<std::string> files = tutorial_files();
    REQUIRE_FALSE(files.empty());
    for (const std::string& name : files) {
        std::vector<Command> cmds = parse(std::string(SS_SOURCE_DIR) + "/tutorials/" + name, name);
        for (const Command& c : cmds) {
            REQUIRE(c.cmd.rfind("shardscope ", 0) == 0);
            std::string line = "cd " + std::string(SS_BINARY_DIR) + " && mkdir -p out && OPENBLAS_NUM_THREADS=1 " +
                               SS_SHARDSCOPE_EXE + c.cmd.substr(std::string("shardscope").size());
            CliResult r = run_shell(line);
            INFO(name << ": $ " << c.cmd << "\n" << r.output);
            REQUIRE(r.code == c.code);
            std::istringstream got(r.output);
            std::string out_line;
            size_t next = 0;
            while (next < c.expect.size() && std::getline(got, out_line))
                if (glob_match(c.expect[next].c_str(), rtrim(out_line).c_str())) ++next;
            INFO("first quoted line not printed (in order): " << (next < c.expect.size() ? c.expect[next] : ""));
            CHECK(next == c.expect.size());
        }
    }
}

TEST_CASE("every chapter links to the next one, and the last back to the first", "[tutorials]") {
    std::vector<std::string> files = tutorial_files();
    REQUIRE(files.size() >= 2);
    for (size_t i = 0; i < files.size(); ++i) {
        std::ifstream f(std::string(SS_SOURCE_DIR) + "/tutorials/" + files[i]);
        std::stringstream text;
        text << f.rdbuf();
        // A reader who finishes chapter i must find chapter i+1 from its end;
        // the last chapter sends them back to the first.
        const bool last = i + 1 == files.size();
        const std::string target = "](" + files[last ? 0 : i + 1] + ")";
        const std::string lead = last ? "Back to [" : "Next: [";
        INFO(files[i] << " should link to " << target << " after \"" << lead << "\"");
        const size_t at = text.str().rfind(lead);
        REQUIRE(at != std::string::npos);
        CHECK(text.str().find(target, at) != std::string::npos);
    }
}

namespace {

std::string read_file(const std::string& path) {
    std::ifstream f(path);
    std::stringstream text;
    text << f.rdbuf();
    return text.str();
}

// A heading's anchor as GitHub makes it: lower case; letters, digits, spaces,
// '-' and '_' kept (anything else, "—" or "'" or "?", dropped); spaces to '-'.
std::string anchor_of(const std::string& heading) {
    std::string a;
    for (unsigned char c : heading) {
        if (std::isalnum(c) || c == '-' || c == '_') a += char(std::tolower(c));
        else if (c == ' ') a += '-';
    }
    return a;
}

std::set<std::string> anchors_in(const std::string& text) {
    std::set<std::string> out;
    std::istringstream in(text);
    std::string line;
    bool fenced = false;
    while (std::getline(in, line)) {
        if (line.rfind("```", 0) == 0) fenced = !fenced;
        if (fenced || line.empty() || line[0] != '#') continue;
        const size_t text_at = line.find_first_not_of('#');
        if (text_at != std::string::npos && text_at < line.size() && line[text_at] == ' ')
            out.insert(anchor_of(line.substr(text_at + 1)));
    }
    return out;
}

}  // namespace

TEST_CASE("no dead link: every relative link in the chapters and the index reaches a file, and its #anchor a heading",
          "[tutorials]") {
    std::vector<std::string> files = tutorial_files();
    files.push_back("README.md");
    const std::string dir = std::string(SS_SOURCE_DIR) + "/tutorials/";
    int links = 0;
    for (const std::string& name : files) {
        const std::string text = read_file(dir + name);
        for (size_t at = text.find("]("); at != std::string::npos; at = text.find("](", at + 2)) {
            const size_t end = text.find(')', at);
            REQUIRE(end != std::string::npos);
            const std::string target = text.substr(at + 2, end - at - 2);
            if (target.rfind("http", 0) == 0 || target.find(' ') != std::string::npos) continue;
            const size_t hash = target.find('#');
            const std::string path = target.substr(0, hash), anchor = hash == std::string::npos ? "" : target.substr(hash + 1);
            const std::string full = path.empty() ? dir + name : dir + path;
            INFO(name << " links to " << target);
            const bool exists = std::ifstream(full).good();
            CHECK(exists);
            if (exists && !anchor.empty()) CHECK(anchors_in(read_file(full)).count(anchor) == 1);
            ++links;
        }
    }
    CHECK(links > 50);
}

TEST_CASE("the index links every chapter; every chapter says what you will learn and run", "[tutorials]") {
    const std::string dir = std::string(SS_SOURCE_DIR) + "/tutorials/";
    const std::string index = read_file(dir + "README.md");
    for (const std::string& name : tutorial_files()) {
        INFO(name);
        CHECK(index.find("](" + name + ")") != std::string::npos);
        // Within the chapter's first 40 lines: "You will learn" and "You will run" (any case).
        std::istringstream in(read_file(dir + name));
        std::string head, line;
        for (int i = 0; i < 40 && std::getline(in, line); ++i) head += line + "\n";
        std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return char(std::tolower(c)); });
        CHECK(head.find("you will learn") != std::string::npos);
        CHECK(head.find("you will run") != std::string::npos);
    }
}
