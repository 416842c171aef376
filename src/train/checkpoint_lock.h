// checkpoint_lock.h — one writer per checkpoint directory.
//
// Two runs that save into the same --checkpoint-dir race: each renames its
// step-N.partial/ and rewrites `latest`, and one of them fails with "cannot
// rename" or, worse, points `latest` at the other's checkpoint. So a run that
// saves holds an exclusive lock on DIR/writer.lock for as long as it runs
// (flock(2): the kernel drops it when the process ends, however it ends, so a
// crashed run never leaves a stale lock). The file holds the holder's pid,
// for the message a second writer gets. Readers (--resume, `checkpoint`)
// take no lock: `latest` only ever names a complete checkpoint.
#pragma once

#include <string>

namespace ss {

/// An exclusive lock on DIR/writer.lock, held from construction to destruction.
class CheckpointDirLock {
public:
    /// Creates @p dir if missing and takes the lock; throws ss::Error naming the
    /// holder's pid when another run (or another lock in this process) holds it.
    explicit CheckpointDirLock(const std::string& dir);
    /// Releases the lock (the file stays; an unlocked file means "no writer").
    ~CheckpointDirLock();
    CheckpointDirLock(const CheckpointDirLock&) = delete;             ///< one holder
    CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;  ///< one holder

    /// The lock file: DIR/writer.lock.
    static std::string path_in(const std::string& dir);

private:
    int fd_ = -1;
};

}  // namespace ss
