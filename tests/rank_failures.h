// rank_failures.h — what went wrong on each rank thread, checked by the test thread.
//
// Catch2's assertions are not thread-safe, so rank threads (run_threads) never
// call them: each rank adds what went wrong to a shared Failures, and the test
// thread calls require_none() once run_threads has returned.
#pragma once

#include <catch2/catch.hpp>

#include <mutex>
#include <string>
#include <vector>

/// What went wrong on the ranks (the first 20 messages), safe to add to from any thread.
struct Failures {
    std::mutex mu;                  ///< guards list
    std::vector<std::string> list;  ///< the messages, in the order they came
    /// Records @p s (after 20 messages, drops it: the first ones tell the story).
    void add(const std::string& s) {
        std::lock_guard<std::mutex> l(mu);
        if (list.size() < 20) list.push_back(s);
    }
};

/// Fails the test, printing every message, if any rank recorded one.
inline void require_none(Failures& f) {
    for (const auto& s : f.list) UNSCOPED_INFO(s);
    REQUIRE(f.list.empty());
}
