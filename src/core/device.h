// device.h — where a rank's tensors live and its kernels run: the CPU or a CUDA GPU.
//
// Each rank runs on one thread (threads backend) or in one process (mpi, nccl),
// so "the device" is a property of the calling thread, as cudaSetDevice is:
//
//     set_current_device(Device::cuda, 0);   // at the start of a rank's thread
//     Tensor t(ledger, Mem::acts, {B, T, C});   // now in GPU memory
//     kern::gelu_forward(...);                  // kernels/dispatch.h: the CUDA twin
//
// GPU memory is CUDA managed memory (cudaMallocManaged): one address that both
// the GPU and the host can read and write. That keeps every strategy the CPU
// runs correct on the GPU without a line changed: the threads backend's
// collectives, the ZeRO shard copies and the optimizer's host loops touch the
// same pointers, and the driver moves the pages where they are used. The price
// is page migration where host code touches GPU data; docs/architecture.md
// ("The device") says where that happens and what a device-resident path would
// change. The rule that keeps it correct: a GPU kernel has finished before
// host code reads what it wrote. kernels/dispatch.cpp waits for each kernel
// (the rank's stream) before returning, so host code may touch any tensor at
// any time, as on the CPU.
//
// The default device of a new thread is cpu, or what the environment variable
// SHARDSCOPE_DEVICE says ("cpu" or "cuda"), and so is `train --device`'s:
// scripts/gpu-check reruns the strategies' equivalence tests on the GPU that
// way. When it cannot be honoured (no GPU) every call fails; it never falls
// back to the CPU, where a GPU check would pass having checked nothing.
#pragma once

#include <cstddef>
#include <string>

namespace ss {

/// Where a rank's tensors live and its kernels run.
enum class Device { cpu, cuda };

/// "cpu" -> Device::cpu, "cuda" (or "gpu", the same) -> Device::cuda; anything else throws ss::Error naming the choices.
Device parse_device(const std::string& name);
/// "cpu" or "cuda".
const char* device_name(Device d);

/// True when this build has the CUDA code (CMake found nvcc).
bool cuda_built();
/// GPUs this process can use (0 without CUDA, without a driver or without a GPU).
int cuda_device_count();
/// "NVIDIA H200" etc.: the name of GPU @p gpu ("" without CUDA or without that GPU).
std::string cuda_device_name(int gpu = 0);
/// Throws ss::Error saying why --device cuda cannot run here (no CUDA in this
/// build, no driver, no GPU), or returns.
void require_cuda();

/// The device of a thread that has not chosen one: SHARDSCOPE_DEVICE ("cpu" or
/// "cuda"), or cpu when it is unset; a bad name throws ss::Error.
Device default_device();
/// @p name parsed (parse_device), or default_device() when it is empty.
Device device_or_default(const std::string& name);
/// This thread's device (see the file comment for the default).
Device current_device();
/// The GPU this thread uses when current_device() is cuda.
int current_gpu();
/// Makes @p d this thread's device. For cuda: selects GPU @p gpu (cudaSetDevice)
/// and gives the thread a stream of its own on it, so several rank threads can
/// share one GPU; checks first that the GPU exists (require_cuda).
void set_current_device(Device d, int gpu = 0);
/// This thread's CUDA stream (a cudaStream_t) when its device is cuda, else null.
void* current_stream();

/// Tunes glibc's malloc, process-wide, for a loop that frees and allocates the
/// same tensors every step: one arena, no trimming below 1 GiB free, mmap only
/// above 32 MiB (glibc's largest threshold). By default a rank thread's arena
/// hands a heap that a step's frees emptied back to the kernel, and the next
/// step's first write to each of its pages is a page fault (`small`, MBS 8:
/// ~350 faults a step, ~35 with this; docs/performance.md). Freed memory then
/// stays in the process, as a caching allocator's does; the Ledger still counts
/// live tensors only. Call once at program start, before any thread; a no-op
/// without glibc.
void keep_host_memory();

/// @p bytes for a tensor on @p d: 64-byte aligned host memory, or CUDA managed
/// memory (readable and writable by the host too). Never null for bytes > 0.
void* device_alloc(Device d, size_t bytes);
/// Frees what device_alloc(@p d, @p bytes) returned (null is ignored).
void device_free(Device d, void* p, size_t bytes);
/// Sets @p bytes at @p p to zero, on this thread's stream when @p d is cuda (then waits for it).
void device_zero(Device d, void* p, size_t bytes);
/// Copies @p bytes between any two buffers (host, managed or device memory); returns when done.
void device_copy(void* dst, const void* src, size_t bytes);
/// Waits until everything queued on this thread's stream is done (no-op on the CPU).
void device_sync();

/// Sets this thread's device for the lifetime of the object, then restores the previous one.
class DeviceScope {
public:
    /// set_current_device(@p d, @p gpu), remembering the thread's device before.
    explicit DeviceScope(Device d, int gpu = 0);
    ~DeviceScope();
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;

private:
    Device before_;
    int before_gpu_;
};

}  // namespace ss
