// run_files.h — the files a training run reads and writes, checked before step 1.
//
//   inputs    --init FILE   --data FILE   --resume DIR
//   outputs   --save FILE   --json FILE   --trace FILE   --dump-grads FILE   --checkpoint-dir DIR
//
// Before any rank starts: every output can be written (core/output_path.h: a
// probe file beside it is created and removed, the checkpoint folder takes
// files), no two outputs name the same file (the second write would replace
// the first), no output is an input, and no output file lies inside a
// checkpoint (the --resume one or the --checkpoint-dir's step directories).
// Paths are compared canonically, so out/x and out/../out/x are one file.
// --checkpoint-dir may be the --resume directory: a resumed run saving beside
// the checkpoint it came from is the usual way to continue.
#pragma once

#include "train/options.h"

namespace ss {

/// Throws ss::Error naming the flag(s) and the path, and what to change, when an
/// output of @p o cannot be written or would overwrite another output or an input.
/// Creates the outputs' missing folders (the writes would).
void check_run_files(const TrainOptions& o);

}  // namespace ss
