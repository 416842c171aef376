// names.h — an enum's names as one table: the name the command line, the
// trace and the JSON use for a value, and the value a name stands for. Each
// enum keeps its table beside its parse function, which adds the message
// that lists the choices.
//
//   constexpr Named<Recompute> kNames[] = {{Recompute::none, "none"}, ...};
//   name_of(kNames, Recompute::none)      -> "none"
//   find_name(kNames, "none")             -> pointer to Recompute::none, or null
#pragma once

#include <cstddef>
#include <string>

namespace ss {

/// One value of enum @p E and its name.
template <class E>
struct Named {
    E value;           ///< the value
    const char* name;  ///< what it is called
};

/// The name of @p v in @p table ("?" if the table lacks it).
template <class E, size_t N>
const char* name_of(const Named<E> (&table)[N], E v) {
    for (const Named<E>& n : table)
        if (n.value == v) return n.name;
    return "?";
}

/// The value called @p s in @p table, or null when no value is.
template <class E, size_t N>
const E* find_name(const Named<E> (&table)[N], const std::string& s) {
    for (const Named<E>& n : table)
        if (s == n.name) return &n.value;
    return nullptr;
}

}  // namespace ss
