// check.cpp — the messages of SS_CUDA_CHECK and SS_CUBLAS_CHECK (check.h).
#include "kernels/cuda/check.h"

#include <cstring>
#include <sstream>
#include <string>

#include "core/check.h"

namespace ss::cuda {

namespace {

thread_local int t_rank = -1;

// "/work/main/kernels/cuda/matmul.cu" -> "kernels/cuda/matmul.cu": the part a reader can open.
const char* short_path(const char* file) {
    const char* k = std::strstr(file, "kernels/");
    return k != nullptr ? k : file;
}

std::string where(const char* kind, const char* file, int line) {
    std::ostringstream os;
    os << kind;
    if (t_rank >= 0) os << " (rank " << t_rank << ")";
    os << " at " << short_path(file) << ":" << line << ": ";
    return os.str();
}

// What to do about the errors a user can act on.
const char* cuda_hint(cudaError_t err) {
    switch (err) {
        case cudaErrorNoDevice:
            return "; no GPU is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES, or run with --device cpu";
        case cudaErrorInsufficientDriver:
            return "; the NVIDIA driver is older than this CUDA toolkit (or missing): check nvidia-smi";
        case cudaErrorMemoryAllocation:
            return "; the GPU is out of memory: lower the micro-batch size or the sequence length, or use ZeRO";
        case cudaErrorNoKernelImageForDevice:
            return "; this build has code for sm_90 (+ PTX for newer): set CMAKE_CUDA_ARCHITECTURES for this GPU";
        default:
            return "";
    }
}

}  // namespace

void set_current_rank(int rank) { t_rank = rank; }

int current_rank() { return t_rank; }

void cuda_fail(cudaError_t err, const char* call, const char* file, int line) {
    std::ostringstream os;
    os << where("CUDA error", file, line) << call << " returned " << cudaGetErrorName(err) << " ("
       << cudaGetErrorString(err) << ")" << cuda_hint(err);
    ::ss::fail(file, line, os.str());
}

void cublas_fail(cublasStatus_t status, const char* call, const char* file, int line) {
    std::ostringstream os;
    os << where("cuBLAS error", file, line) << call << " returned " << cublasGetStatusName(status) << " ("
       << cublasGetStatusString(status) << ")";
    ::ss::fail(file, line, os.str());
}

}  // namespace ss::cuda
