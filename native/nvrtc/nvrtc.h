// NVRTC (the CUDA runtime compiler), loaded at run time.
//
// Like cuBLAS and NCCL: the build machines have no NVRTC, and a user without it keeps every other
// feature, so the addon never links it. These declarations mirror the entry points we call;
// nvrtc_check.cc proves they match nvrtc.h wherever that header exists at build time.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ck {
namespace nvrtc {

enum Result : int {
  kSuccess = 0,
  kOutOfMemory = 1,
  kProgramCreationFailure = 2,
  kInvalidInput = 3,
  kInvalidProgram = 4,
  kInvalidOption = 5,
  kCompilation = 6,
  kBuiltinOperationFailure = 7,
  kNoNameExpressionsAfterCompilation = 8,
  kNoLoweredNamesBeforeCompilation = 9,
  kNameExpressionNotValid = 10,
  kInternalError = 11,
};

struct ProgramImpl;
using Program = ProgramImpl*;

using PFN_GetErrorString = const char* (*)(Result);
using PFN_Version = Result (*)(int*, int*);
using PFN_GetNumSupportedArchs = Result (*)(int*);
using PFN_GetSupportedArchs = Result (*)(int*);
using PFN_CreateProgram = Result (*)(Program*, const char*, const char*, int, const char* const*,
                                     const char* const*);
using PFN_DestroyProgram = Result (*)(Program*);
using PFN_CompileProgram = Result (*)(Program, int, const char* const*);
using PFN_GetPTXSize = Result (*)(Program, size_t*);
using PFN_GetPTX = Result (*)(Program, char*);
using PFN_GetCUBINSize = Result (*)(Program, size_t*);
using PFN_GetCUBIN = Result (*)(Program, char*);
using PFN_GetProgramLogSize = Result (*)(Program, size_t*);
using PFN_GetProgramLog = Result (*)(Program, char*);
using PFN_AddNameExpression = Result (*)(Program, const char* const);
using PFN_GetLoweredName = Result (*)(Program, const char* const, const char**);

struct Api {
  std::string path;      // the file dlopen was given
  std::string identity;  // realpath|size|mtime of the file that was loaded (identity())
  int major = 0, minor = 0;
  std::vector<int> archs;  // nvrtcGetSupportedArchs, ascending (75, 80, …, 120)
  PFN_GetErrorString getErrorString = nullptr;
  PFN_Version version = nullptr;
  PFN_GetNumSupportedArchs getNumSupportedArchs = nullptr;
  PFN_GetSupportedArchs getSupportedArchs = nullptr;
  PFN_CreateProgram createProgram = nullptr;
  PFN_DestroyProgram destroyProgram = nullptr;
  PFN_CompileProgram compileProgram = nullptr;
  PFN_GetPTXSize getPTXSize = nullptr;
  PFN_GetPTX getPTX = nullptr;
  PFN_GetCUBINSize getCUBINSize = nullptr;
  PFN_GetCUBIN getCUBIN = nullptr;
  PFN_GetProgramLogSize getProgramLogSize = nullptr;
  PFN_GetProgramLog getProgramLog = nullptr;
  PFN_AddNameExpression addNameExpression = nullptr;
  PFN_GetLoweredName getLoweredName = nullptr;
};

// The loaded library; throws CudaFailure "nvrtcLibraryNotFound" (saying what to install and naming
// every place tried) when it cannot be loaded. Loading is attempted once per process: the file named
// by CUDA_KERNELS_NVRTC when that is set (and nothing else), else libnvrtc.so.<CUDA major of this
// binary>, then libnvrtc.so, from CUDA_PATH/lib64, /usr/local/cuda/lib64 and the loader's path.
const Api& api();

// Whether api() has been called (and so whether NVRTC is in memory), without loading it.
bool attempted();

// What identifies the NVRTC that compiles for this process, for the kernel cache's key, without
// loading it when possible: "realpath|size|mtime" of the loaded library, else of the first candidate
// file that exists (the one api() would load). Empty when neither is known (only bare names, found by
// the dynamic loader): the caller then loads NVRTC and asks again.
std::string identity();

// "NVRTC_ERROR_COMPILATION" for kCompilation, …
const char* resultName(Result r);

// Where the toolkit's headers are (cuda_fp16.h, cuda_bf16.h, and libcu++ under cccl/ in CUDA 13), for
// `-I` options: the first of <NVRTC's folder>/../include, CUDA_PATH/include and /usr/local/cuda/include
// that holds cuda_fp16.h, with its cccl/ subfolder when there is one; empty when none does. Uses the
// same file as identity(), so it loads nothing either.
std::vector<std::string> toolkitIncludeDirs();

}  // namespace nvrtc
}  // namespace ck
