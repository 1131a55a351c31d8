#include "nvrtc/nvrtc.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <mutex>

#include "core/dynlib.h"
#include "core/errors.h"

namespace ck {
namespace nvrtc {

namespace {

// The NVRTC of the CUDA major this binary was built with (13, or 12 for the fallback build): its
// cubins and its PTX are what this runtime's driver requirement already covers.
std::string cudaMajor() {
  return std::to_string(CUDART_VERSION / 1000);
}

std::string namedFile() {
  const char* named = std::getenv("CUDA_KERNELS_NVRTC");
  return named != nullptr ? std::string(named) : std::string();
}

std::vector<std::string> libraryDirs() {
  std::vector<std::string> dirs;
  if (const char* p = std::getenv("CUDA_PATH"); p != nullptr && p[0] != '\0')
    dirs.push_back(std::string(p) + "/lib64");
  dirs.push_back("/usr/local/cuda/lib64");
  return dirs;
}

std::vector<std::string> candidates() {
  const std::string named = namedFile();
  if (!named.empty()) return {named};
  std::vector<std::string> out;
  for (const std::string& name : {"libnvrtc.so." + cudaMajor(), std::string("libnvrtc.so")}) {
    for (const auto& d : libraryDirs()) out.push_back(d + "/" + name);
    out.push_back(name);  // the dynamic loader's own search path
  }
  return out;
}

bool isFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string dirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

std::string realPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

// "realpath|size|mtime": changes whenever the library file does (an upgrade, another toolkit).
std::string fileIdentity(const std::string& path) {
  const std::string real = realPath(path);
  struct stat st {};
  if (real.empty() || stat(real.c_str(), &st) != 0) return "";
  return real + "|" + std::to_string(static_cast<long long>(st.st_size)) + "|" +
         std::to_string(static_cast<long long>(st.st_mtim.tv_sec)) + "." +
         std::to_string(static_cast<long long>(st.st_mtim.tv_nsec));
}

// Where the dynamic loader would find a bare file name: LD_LIBRARY_PATH, then the usual system
// folders. An approximation of ld.so's search (it also reads ld.so.cache); identity() only uses it
// until NVRTC is loaded, and the cache re-keys with the loaded file's identity on a miss.
std::string findOnLoaderPath(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    std::string all(ld);
    size_t start = 0;
    while (start <= all.size()) {
      const size_t colon = all.find(':', start);
      const std::string d = all.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!d.empty()) dirs.push_back(d);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  for (const char* d :
       {"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/lib64", "/usr/lib"})
    dirs.push_back(d);
  for (const auto& d : dirs)
    if (isFile(d + "/" + name)) return d + "/" + name;
  return "";
}

// The file api() would load first, without loading it; empty when unknown.
std::string locate() {
  for (const auto& c : candidates()) {
    if (c.find('/') != std::string::npos) {
      if (isFile(c)) return c;
    } else if (std::string found = findOnLoaderPath(c); !found.empty()) {
      return found;
    }
  }
  return "";
}

// The file behind a dlopen handle (the loader's choice when it was given a bare name).
std::string loadedFile(void* lib, const std::string& opened) {
  struct link_map* map = nullptr;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0')
    return map->l_name;
  return opened;
}

struct Loaded {
  Api api;
  std::string file;  // the loaded file, for toolkitIncludeDirs()
  bool ok = false;
  std::string code, message;
};

std::string notFoundMessage(const std::string& named, const std::string& tried) {
  const std::string so = "libnvrtc.so." + cudaMajor();
  if (!named.empty())
    return "NVRTC could not be loaded from CUDA_KERNELS_NVRTC=" + named +
           ", so compile(), elementwise() and reduction() are unavailable (everything else works). Point "
           "CUDA_KERNELS_NVRTC at " +
           so + ", or unset it to search the usual places. Tried:" + tried;
  return "NVRTC (the CUDA runtime compiler) could not be loaded, so compile(), elementwise() and reduction() "
         "are unavailable (everything else works). Install the CUDA " +
         cudaMajor() + " toolkit (its lib64 holds " + so +
         "), or NVRTC alone: your distribution's NVRTC package (from NVIDIA's repository: cuda-nvrtc-" +
         cudaMajor() + "-0, or the one of your CUDA " + cudaMajor() +
         " minor version) or the nvidia-cuda-nvrtc Python wheel. Then set CUDA_PATH to the toolkit's folder, "
         "or CUDA_KERNELS_NVRTC to the path of " +
         so + ". Tried:" + tried;
}

Loaded load() {
  Loaded r;
  const std::string named = namedFile();
  std::string tried;
  void* lib = openFirst(candidates(), &r.api.path, &tried);
  if (lib == nullptr) {
    r.code = "nvrtcLibraryNotFound";
    r.message = notFoundMessage(named, tried);
    return r;
  }
  try {
    Api& a = r.api;
    const auto bind = [&](auto& fn, const char* symbol) {
      bindSymbol(lib, fn, symbol, "nvrtcSymbolNotFound", "NVRTC at " + a.path,
                 " (NVRTC from CUDA 11.2 or newer is needed)");
    };
    bind(a.getErrorString, "nvrtcGetErrorString");
    bind(a.version, "nvrtcVersion");
    bind(a.getNumSupportedArchs, "nvrtcGetNumSupportedArchs");
    bind(a.getSupportedArchs, "nvrtcGetSupportedArchs");
    bind(a.createProgram, "nvrtcCreateProgram");
    bind(a.destroyProgram, "nvrtcDestroyProgram");
    bind(a.compileProgram, "nvrtcCompileProgram");
    bind(a.getPTXSize, "nvrtcGetPTXSize");
    bind(a.getPTX, "nvrtcGetPTX");
    bind(a.getCUBINSize, "nvrtcGetCUBINSize");
    bind(a.getCUBIN, "nvrtcGetCUBIN");
    bind(a.getProgramLogSize, "nvrtcGetProgramLogSize");
    bind(a.getProgramLog, "nvrtcGetProgramLog");
    bind(a.addNameExpression, "nvrtcAddNameExpression");
    bind(a.getLoweredName, "nvrtcGetLoweredName");
    if (a.version(&a.major, &a.minor) != kSuccess)
      throw CudaFailure("nvrtcVersionUnknown", "nvrtcVersion",
                        "NVRTC at " + a.path + " did not report its version");
    int count = 0;
    if (a.getNumSupportedArchs(&count) != kSuccess || count <= 0 || count > 1024)
      throw CudaFailure("nvrtcArchsUnknown", "nvrtcGetNumSupportedArchs",
                        "NVRTC at " + a.path + " did not report the architectures it supports");
    a.archs.assign(static_cast<size_t>(count), 0);
    if (a.getSupportedArchs(a.archs.data()) != kSuccess)
      throw CudaFailure("nvrtcArchsUnknown", "nvrtcGetSupportedArchs",
                        "NVRTC at " + a.path + " did not report the architectures it supports");
    r.file = loadedFile(lib, a.path);
    a.identity = fileIdentity(r.file);
    if (a.identity.empty())
      a.identity = r.file + "|" + std::to_string(a.major) + "." + std::to_string(a.minor);
    // NVRTC opens libnvrtc-builtins.so.<major>.<minor> by bare name when it compiles, which fails
    // unless that folder is on the loader's path (a wheel's lib/, a toolkit named by CUDA_KERNELS_NVRTC).
    // Loaded here first from NVRTC's own folder, the bare name then finds it. Kept open for good.
    const std::string builtins = dirOf(realPath(r.file).empty() ? r.file : realPath(r.file)) +
                                 "/libnvrtc-builtins.so." + std::to_string(a.major) + "." +
                                 std::to_string(a.minor);
    if (isFile(builtins)) dlopen(builtins.c_str(), RTLD_NOW | RTLD_LOCAL);
    r.ok = true;
  } catch (const CudaFailure& f) {
    r.code = f.code();
    r.message = f.what();
  }
  return r;
}

std::once_flag loadOnce;
Loaded* loadedState = nullptr;

const Loaded& loaded() {
  std::call_once(loadOnce, [] { loadedState = new Loaded(load()); });
  return *loadedState;
}

std::atomic<bool> loadAttempted{false};

}  // namespace

const Api& api() {
  loadAttempted.store(true);
  const Loaded& l = loaded();
  if (!l.ok) throw CudaFailure(l.code, "dlopen(libnvrtc)", l.message);
  return l.api;
}

bool attempted() {
  return loadAttempted.load();
}

std::string identity() {
  if (attempted()) {
    const Loaded& l = loaded();
    if (l.ok) return l.api.identity;
  }
  const std::string file = locate();
  return file.empty() ? std::string() : fileIdentity(file);
}

std::vector<std::string> toolkitIncludeDirs() {
  std::string file;
  if (attempted() && loaded().ok) file = loaded().file;
  if (file.empty()) file = locate();
  std::vector<std::string> roots;
  if (!file.empty()) {
    const std::string real = realPath(file);
    roots.push_back(dirOf(real.empty() ? file : real) + "/../include");
  }
  if (const char* p = std::getenv("CUDA_PATH"); p != nullptr && p[0] != '\0')
    roots.push_back(std::string(p) + "/include");
  roots.push_back("/usr/local/cuda/include");
  for (const auto& root : roots) {
    if (!isFile(root + "/cuda_fp16.h")) continue;
    const std::string dir = realPath(root);
    std::vector<std::string> out{dir};
    struct stat st {};
    if (stat((dir + "/cccl").c_str(), &st) == 0 && S_ISDIR(st.st_mode)) out.push_back(dir + "/cccl");
    return out;
  }
  return {};
}

const char* resultName(Result r) {
  switch (r) {
    case kSuccess: return "NVRTC_SUCCESS";
    case kOutOfMemory: return "NVRTC_ERROR_OUT_OF_MEMORY";
    case kProgramCreationFailure: return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
    case kInvalidInput: return "NVRTC_ERROR_INVALID_INPUT";
    case kInvalidProgram: return "NVRTC_ERROR_INVALID_PROGRAM";
    case kInvalidOption: return "NVRTC_ERROR_INVALID_OPTION";
    case kCompilation: return "NVRTC_ERROR_COMPILATION";
    case kBuiltinOperationFailure: return "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE";
    case kNoNameExpressionsAfterCompilation: return "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION";
    case kNoLoweredNamesBeforeCompilation: return "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION";
    case kNameExpressionNotValid: return "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID";
    case kInternalError: return "NVRTC_ERROR_INTERNAL_ERROR";
  }
  return "NVRTC_ERROR_UNKNOWN";
}

}  // namespace nvrtc
}  // namespace ck
