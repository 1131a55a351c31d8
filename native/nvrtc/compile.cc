#include "nvrtc/compile.h"

namespace ck {
namespace nvrtc {

namespace {

// Destroys the program on every way out of compileProgram.
struct ProgramGuard {
  const Api& api;
  Program program = nullptr;
  ~ProgramGuard() {
    if (program != nullptr) api.destroyProgram(&program);
  }
};

std::vector<const char*> pointers(const std::vector<std::string>& strings) {
  std::vector<const char*> out;
  out.reserve(strings.size());
  for (const auto& s : strings) out.push_back(s.c_str());
  return out;
}

// false (with the output's result and call set) when `r` is not success.
bool ok(Result r, const char* call, CompileOutput* out) {
  if (r == kSuccess) return true;
  out->result = r;
  out->failedCall = call;
  return false;
}

}  // namespace

CompileOutput compileProgram(const CompileRequest& req) {
  const Api& a = api();
  CompileOutput out;
  ProgramGuard guard{a};
  const std::vector<const char*> headers = pointers(req.headerSources), names = pointers(req.headerNames);
  if (req.headerNames.size() != req.headerSources.size()) {
    out.result = kInvalidInput;
    out.failedCall = "nvrtcCreateProgram";
    out.log = "every header needs a name and a source";
    return out;
  }
  if (!ok(a.createProgram(&guard.program, req.source.c_str(), req.name.c_str(),
                          static_cast<int>(headers.size()), headers.empty() ? nullptr : headers.data(),
                          names.empty() ? nullptr : names.data()),
          "nvrtcCreateProgram", &out))
    return out;
  for (const auto& e : req.nameExpressions)
    if (!ok(a.addNameExpression(guard.program, e.c_str()), "nvrtcAddNameExpression", &out)) return out;

  const std::vector<const char*> options = pointers(req.options);
  const Result compiled = a.compileProgram(guard.program, static_cast<int>(options.size()),
                                           options.empty() ? nullptr : options.data());
  // The log is read whatever the outcome: warnings on success, the errors on failure.
  size_t logSize = 0;
  if (a.getProgramLogSize(guard.program, &logSize) == kSuccess && logSize > 1) {
    std::string log(logSize, '\0');
    if (a.getProgramLog(guard.program, log.data()) == kSuccess) {
      log.resize(logSize - 1);  // the size counts the terminating NUL
      out.log = std::move(log);
    }
  }
  if (!ok(compiled, "nvrtcCompileProgram", &out)) return out;

  size_t size = 0;
  if (req.ptx) {
    if (!ok(a.getPTXSize(guard.program, &size), "nvrtcGetPTXSize", &out)) return out;
  } else if (!ok(a.getCUBINSize(guard.program, &size), "nvrtcGetCUBINSize", &out)) {
    return out;
  }
  if (size == 0) {
    // NVRTC makes no cubin for a compute_XX target; the caller asked for the wrong kind.
    out.result = kInvalidOption;
    out.failedCall = req.ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize";
    return out;
  }
  out.code.assign(size, '\0');
  if (!ok(req.ptx ? a.getPTX(guard.program, out.code.data()) : a.getCUBIN(guard.program, out.code.data()),
          req.ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN", &out))
    return out;

  // The lowered names belong to the program: copied before it is destroyed.
  for (const auto& e : req.nameExpressions) {
    const char* lowered = nullptr;
    if (!ok(a.getLoweredName(guard.program, e.c_str(), &lowered), "nvrtcGetLoweredName", &out)) return out;
    out.lowered.emplace_back(lowered != nullptr ? lowered : "");
  }
  return out;
}

}  // namespace nvrtc
}  // namespace ck
