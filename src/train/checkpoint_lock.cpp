// checkpoint_lock.cpp — flock(2) on DIR/writer.lock (see checkpoint_lock.h).
#include "train/checkpoint_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "core/check.h"

namespace ss {

std::string CheckpointDirLock::path_in(const std::string& dir) { return dir + "/writer.lock"; }

CheckpointDirLock::CheckpointDirLock(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const std::string path = path_in(dir);
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    SS_CHECK(fd_ >= 0, "--checkpoint-dir " << dir << ": cannot create the lock file " << path << " ("
                                           << std::strerror(errno) << "); choose a folder you can write");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        char holder[64] = {0};
        const ssize_t n = ::pread(fd_, holder, sizeof holder - 1, 0);
        std::string who = n > 0 ? std::string(holder, size_t(n)) : std::string("unknown");
        while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
        ::close(fd_);
        fd_ = -1;
        SS_CHECK(err != EWOULDBLOCK, "--checkpoint-dir " << dir << " is in use: another run (pid " << who
                                                          << ") is saving checkpoints there (" << path
                                                          << " is locked); wait for it to end, or give this run "
                                                          << "its own --checkpoint-dir");
        SS_FAIL("--checkpoint-dir " << dir << ": cannot lock " << path << " (" << std::strerror(err) << ")");
    }
    const std::string me = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) == 0) {
        const ssize_t wrote = ::pwrite(fd_, me.data(), me.size(), 0);
        (void)wrote;  // the pid is for messages only; the lock is what counts
    }
}

CheckpointDirLock::~CheckpointDirLock() {
    if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

}  // namespace ss
