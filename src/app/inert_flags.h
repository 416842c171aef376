// inert_flags.h — a flag the user typed that the run would not use is refused.
//
//   shardscope train --zero 1 --prefetch 2        error: --prefetch does nothing in this run: it needs --zero 3 ...
//   shardscope bench trace --zero 3 --bucket-mb 1 error: --bucket-mb does nothing in this run: it needs --zero 0 ...
//   shardscope train --link 10,6                  error: --link does nothing in this run: it needs 2 or more ranks ...
//   shardscope train --backend nccl --prefetch 2  error: --prefetch does nothing in this run: it needs --backend threads ...
//
// An inert flag lets its reader believe the run did what it did not. Every
// command that trains with typed TrainOptions (train, bench trace) calls the
// same check, so the same flag is refused with the same words everywhere.
#pragma once

namespace CLI {
class App;
}

namespace ss {
struct TrainOptions;
}

namespace ss::app {

/// Throws ss::Error naming the flag and what it needs when a flag given on @p cmd
/// (--prefetch, --bucket-mb, --outer-lr, --outer-momentum, --quant-block, --qgz-bits,
/// --ring-split, --keep-last, the link flags at one rank, and --overlap on or --prefetch
/// with --backend nccl) does nothing in the run @p o. Flags left at their defaults, and
/// flags @p cmd does not have, are never refused. The nccl ones are checked first (they
/// depend on the backend alone); then @p o (check_train_options), so a bad layout gets
/// its own error before the rest.
void refuse_inert_flags(const CLI::App& cmd, const TrainOptions& o);

}  // namespace ss::app
