// One NVRTC compilation: source, headers and options in, cubin (or PTX) and NVRTC's log out.
// Plain C++, no N-API: the binding runs it on the JS thread (compile) or on a libuv pool thread
// (compileAsync); NVRTC allows concurrent compilations of different programs.
#pragma once

#include <string>
#include <vector>

#include "nvrtc/nvrtc.h"

namespace ck {
namespace nvrtc {

struct CompileRequest {
  std::string source;
  std::string name;                  // the program's file name, as errors show it
  std::vector<std::string> options;  // NVRTC options, the architecture included
  std::vector<std::string> headerNames, headerSources;
  std::vector<std::string> nameExpressions;  // for nvrtcGetLoweredName (templates, C++ names)
  bool ptx = false;                          // fetch PTX (a compute_XX target) rather than a cubin
};

struct CompileOutput {
  Result result = kSuccess;          // the first call that did not succeed, or kSuccess
  std::string failedCall;            // that call's name ("nvrtcCompileProgram", …), empty on success
  std::string log;                   // the program's log, warnings included (also on success)
  std::vector<char> code;            // the cubin, or the PTX text with its terminating NUL
  std::vector<std::string> lowered;  // one mangled name per name expression, in order
};

// Throws CudaFailure only when NVRTC cannot be loaded; every NVRTC failure is in the output.
CompileOutput compileProgram(const CompileRequest& request);

}  // namespace nvrtc
}  // namespace ck
