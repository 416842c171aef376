// cli.cpp — the `shardscope` command tree, parsed and run (see cli.h).
#include "app/cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "app/commands.h"
#include "core/check.h"

namespace ss::app {

namespace {

constexpr const char* kDescription = "ShardScope: distributed training of GPT-2, traced and explained";

}  // namespace

void add_commands(CLI::App& root) {
    root.require_subcommand(1);
    add_train_command(root);
    add_bench_command(root);
    add_mesh_command(root);
    add_trace_command(root);
    add_plan_command(root);
    add_schedule_command(root);
    add_checkpoint_command(root);
    add_diagram_command(root);
}

namespace {

// After a refused parse: the deepest command it reached ("checkpoint"), and the
// names of that command's own subcommands ("show, consolidate"), if it has any.
std::string subcommand_choices(const CLI::App& root, std::string* path) {
    const CLI::App* at = &root;
    for (std::vector<const CLI::App*> used = at->get_subcommands({}); !used.empty();) {
        const CLI::App* next = nullptr;
        for (const CLI::App* s : used)
            if (s->parsed()) next = s;
        if (!next) break;
        at = next;
        *path += " " + at->get_name();
        used = at->get_subcommands({});
    }
    std::string names;
    for (const CLI::App* s : at->get_subcommands({})) names += (names.empty() ? "" : ", ") + s->get_name();
    return names;
}

}  // namespace

int run_command_line(int argc, const char* const* argv) {
    CLI::App root{kDescription};
    add_commands(root);
    try {
        root.parse(argc, argv);
    } catch (const CLI::ConversionError& e) {  // "Could not convert: --mbs = 2.5": in the project's form
        std::fprintf(stderr, "shardscope: error: %s: not a value of the kind that flag takes (counts are whole "
                             "numbers); see its --help\n", e.what());
        return 1;
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return root.exit(e);  // --help, --help-all: printed, and success
        // CLI11's own messages, in the project's form and exit code (1, as every other refusal);
        // a flag given twice said "--steps: At Most 1 required but received 2" (exit 114).
        const std::string what = e.what();
        const std::string twice = ": At Most 1 required but received ";
        const size_t at = what.find(twice);
        std::string command = "shardscope";
        const std::string choices = subcommand_choices(root, &command);
        if (at != std::string::npos)
            std::fprintf(stderr, "shardscope: error: %s was given %s times; give it once\n", what.substr(0, at).c_str(),
                         what.substr(at + twice.size()).c_str());
        else if (!choices.empty() && (what.find("A subcommand is required") != std::string::npos ||
                                      what.find("was not expected") != std::string::npos))
            // `shardscope checkpoint foo` said "The following argument was not expected: foo"
            std::fprintf(stderr, "shardscope: error: %s; `%s` takes one of: %s\n", what.c_str(), command.c_str(),
                         choices.c_str());
        else
            std::fprintf(stderr, "shardscope: error: %s; add --help to the command for its flags\n", what.c_str());
        return 1;
    } catch (const ss::Error& e) {
        std::fprintf(stderr, "shardscope: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "shardscope: internal error: %s\n", e.what());
        return 1;
    }
    return 0;
}

int check_command_line(const std::vector<std::string>& args) {
    CLI::App root{kDescription};
    add_commands(root);
    // CLI11 runs the root's parse-complete callback after every flag is
    // converted and every requirement checked, and before any subcommand's
    // callback: stopping there leaves the work undone. (The subcommands'
    // callbacks cannot simply be removed: they own the flags' storage.)
    root.parse_complete_callback([] { throw CLI::Success(); });
    std::vector<const char*> argv{"shardscope"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    try {
        root.parse(int(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
        return e.get_exit_code();
    } catch (const ss::Error&) {  // a flag whose own parser rejects its value (--inject-fault)
        return 1;
    }
    return 0;
}

}  // namespace ss::app
