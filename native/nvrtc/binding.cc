// N-API glue for users' own kernels (lib/kernels): NVRTC's state and compilations, loading the code,
// looking kernels up and launching them. lib/kernels checks every argument first and gives the
// friendly errors; these re-checks only keep what reaches CUDA from crashing the process.
#include <fcntl.h>
#include <napi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/args.h"
#include "core/buffer.h"
#include "core/device.h"
#include "core/errors.h"
#include "nvrtc/compile.h"
#include "nvrtc/entry.h"
#include "nvrtc/module.h"
#include "nvrtc/nvrtc.h"

namespace ck {

namespace {

const napi_type_tag kLibraryTag = {0x6375646b6e767274ULL, 0x2e6c696272617279ULL};
const napi_type_tag kKernelTag = {0x6375646b6e767274ULL, 0x2e6b65726e656c31ULL};

// Loaded code stays loaded for the life of the process: a launch still queued could be using it, and
// cudaLibraryUnload does not wait for the stream. lib/kernels loads each distinct binary once. The
// image is kept with it (never freed, like the library): with lazy loading the driver may read it
// when a kernel first runs in another device's context.
struct LibraryState {
  std::vector<uint8_t> image;
  nvrtc::Library library = nullptr;
};

enum class ParamKind : int { Scalar = 0, ReadPointer = 1, WrittenPointer = 2 };

struct Param {
  std::string name;
  size_t size = 0;
  size_t offset = 0;  // in the packed buffer JS fills
  ParamKind kind = ParamKind::Scalar;
};

// One kernel on one device, with the layout of the packed parameter buffer.
struct KernelState {
  nvrtc::Kernel kernel = nullptr;
  int device = 0;
  std::string name;
  std::vector<Param> params;
  std::vector<size_t> pointers;  // indices of the pointer parameters, in order
  size_t bytes = 0;
  int sharedAllowed = 0;    // dynamic shared memory a launch may ask without opting in (from the attributes)
  std::vector<void*> args;  // reused by every launch (one JS thread per environment)
};

std::vector<std::string> stringsArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsArray())
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be an array of strings");
  Napi::Array a = info[i].As<Napi::Array>();
  std::vector<std::string> out;
  out.reserve(a.Length());
  for (uint32_t k = 0; k < a.Length(); ++k) {
    Napi::Value v = a.Get(k);
    if (!v.IsString())
      throw Napi::TypeError::New(info.Env(), std::string(name) + " must be an array of strings");
    out.push_back(v.As<Napi::String>().Utf8Value());
  }
  return out;
}

std::string stringArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsString())
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

Napi::Uint8Array bytesArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsTypedArray() ||
      info[i].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a Uint8Array");
  return info[i].As<Napi::Uint8Array>();
}

// (source, name, options, headerNames, headerSources, nameExpressions, ptx) -> request.
nvrtc::CompileRequest compileRequest(const Napi::CallbackInfo& info) {
  nvrtc::CompileRequest r;
  r.source = stringArg(info, 0, "source");
  r.name = stringArg(info, 1, "name");
  r.options = stringsArg(info, 2, "options");
  r.headerNames = stringsArg(info, 3, "headerNames");
  r.headerSources = stringsArg(info, 4, "headerSources");
  if (r.headerNames.size() != r.headerSources.size())
    throw Napi::RangeError::New(info.Env(), "headerNames and headerSources must have the same length");
  r.nameExpressions = stringsArg(info, 5, "nameExpressions");
  if (info.Length() <= 6 || !info[6].IsBoolean())
    throw Napi::TypeError::New(info.Env(), "ptx must be a boolean");
  r.ptx = info[6].As<Napi::Boolean>().Value();
  return r;
}

// { ok, result, failedCall, log, code, lowered }: a failed compilation is a result, not an exception,
// so that lib/kernels can build its CompileError from the log.
Napi::Object compileResult(Napi::Env env, const nvrtc::CompileOutput& out) {
  auto o = Napi::Object::New(env);
  o.Set("ok", out.result == nvrtc::kSuccess);
  o.Set("result", nvrtc::resultName(out.result));
  o.Set("failedCall", out.failedCall);
  o.Set("log", out.log);
  o.Set("code",
        Napi::Buffer<uint8_t>::Copy(env, reinterpret_cast<const uint8_t*>(out.code.data()), out.code.size()));
  auto lowered = Napi::Array::New(env, out.lowered.size());
  for (uint32_t i = 0; i < out.lowered.size(); ++i) lowered.Set(i, out.lowered[i]);
  o.Set("lowered", lowered);
  return o;
}

// nvrtcInfo() -> { available, path?, version?, archs?, identity?, includeDirs, code?, reason? }: loads
// NVRTC (once per process) and never throws. A binary that cannot load compiled code (built with CUDA
// before 12.5) is unavailable even where NVRTC loads (code cudaErrorNotSupported, NVRTC's fields set):
// compile() would fail at its load.
Napi::Value nvrtcInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto o = Napi::Object::New(env);
  try {
    const nvrtc::Api& a = nvrtc::api();
    const std::string missing = nvrtc::libraryApiMissing();
    o.Set("available", missing.empty());
    if (!missing.empty()) {
      o.Set("code", "cudaErrorNotSupported");
      o.Set("reason", missing);
    }
    o.Set("path", a.path);
    o.Set("version", std::to_string(a.major) + "." + std::to_string(a.minor));
    o.Set("identity", a.identity);
    auto archs = Napi::Array::New(env, a.archs.size());
    for (uint32_t i = 0; i < a.archs.size(); ++i) archs.Set(i, a.archs[i]);
    o.Set("archs", archs);
  } catch (const CudaFailure& f) {
    o.Set("available", false);
    o.Set("code", f.code());
    o.Set("reason", f.what());
  }
  const std::vector<std::string> dirs = nvrtc::toolkitIncludeDirs();
  auto includes = Napi::Array::New(env, dirs.size());
  for (uint32_t i = 0; i < dirs.size(); ++i) includes.Set(i, dirs[i]);
  o.Set("includeDirs", includes);
  return o;
}

// nvrtcLocate() -> { identity: string | null, includeDirs, loaded }: what the kernel cache keys on,
// without loading NVRTC when the file can be found by looking (identity null when it cannot).
Napi::Value nvrtcLocate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto o = Napi::Object::New(env);
  const std::string id = nvrtc::identity();
  o.Set("identity", id.empty() ? Napi::Value(env.Null()) : Napi::Value(Napi::String::New(env, id)));
  const std::vector<std::string> dirs = nvrtc::toolkitIncludeDirs();
  auto includes = Napi::Array::New(env, dirs.size());
  for (uint32_t i = 0; i < dirs.size(); ++i) includes.Set(i, dirs[i]);
  o.Set("includeDirs", includes);
  o.Set("loaded", nvrtc::attempted());
  return o;
}

// nvrtcCompile(source, name, options, headerNames, headerSources, nameExpressions, ptx) -> result.
Napi::Value nvrtcCompile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const nvrtc::CompileRequest request = compileRequest(info);
  return guard(env, [&]() -> Napi::Value { return compileResult(env, nvrtc::compileProgram(request)); });
}

class CompileWorker : public Napi::AsyncWorker {
 public:
  CompileWorker(Napi::Env env, nvrtc::CompileRequest request)
      : Napi::AsyncWorker(env, "cuda-kernels.compile"),
        request_(std::move(request)),
        deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    try {
      output_ = nvrtc::compileProgram(request_);
    } catch (const CudaFailure& f) {
      failure_ = std::make_unique<CudaFailure>(f);
    } catch (const std::exception& e) {
      failure_ = std::make_unique<CudaFailure>("nvrtcInternalError", "nvrtcCompileProgram", e.what());
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (failure_)
      deferred_.Reject(makeJsError(env, *failure_).Value());
    else
      deferred_.Resolve(compileResult(env, output_));
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  nvrtc::CompileRequest request_;
  nvrtc::CompileOutput output_;
  std::unique_ptr<CudaFailure> failure_;
  Napi::Promise::Deferred deferred_;
};

// nvrtcCompileAsync(same arguments) -> Promise<result>: the compilation on a libuv pool thread.
Napi::Value nvrtcCompileAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* worker = new CompileWorker(env, compileRequest(info));
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

LibraryState& unwrapLibrary(Napi::Value value) {
  if (!value.IsExternal() || !value.As<Napi::External<LibraryState>>().CheckTypeTag(&kLibraryTag))
    throw Napi::TypeError::New(value.Env(), "library must be a library handle");
  return *value.As<Napi::External<LibraryState>>().Data();
}

KernelState& unwrapKernel(Napi::Value value) {
  if (!value.IsExternal() || !value.As<Napi::External<KernelState>>().CheckTypeTag(&kKernelTag))
    throw Napi::TypeError::New(value.Env(), "kernel must be a kernel handle");
  return *value.As<Napi::External<KernelState>>().Data();
}

// kernelsLoad(device, code: Uint8Array, ptx) -> library handle.
Napi::Value kernelsLoad(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = intArg(info, 0, "device");
  Napi::Uint8Array code = bytesArg(info, 1, "code");
  if (info.Length() <= 2 || !info[2].IsBoolean()) throw Napi::TypeError::New(env, "ptx must be a boolean");
  const bool ptx = info[2].As<Napi::Boolean>().Value();
  return guard(env, [&]() -> Napi::Value {
    auto state = std::make_unique<LibraryState>();
    state->image.assign(code.Data(), code.Data() + code.ByteLength());
    state->library = nvrtc::loadLibrary(device, state->image.data(), state->image.size(), ptx);
    // Not deleted with the handle: the library it describes is never unloaded (see LibraryState).
    auto handle = Napi::External<LibraryState>::New(env, state.release());
    handle.TypeTag(&kLibraryTag);
    return handle;
  });
}

// kernelsReadEntry(path, key, touchAfterMs?) -> [code: Buffer, meta: string, cubin: boolean, arch: number]
// of the kernel cache entry at `path` when it is a whole, undamaged entry for `key` (nvrtc/entry.h: magic,
// lengths, key, CRC-64); false when the file is there but is not; null when it cannot be read whole
// (missing, not a regular file, an I/O error, shorter than its size said, no memory for it). A disk hit's
// read, check and split in one call: in JavaScript, readFileSync and a SHA-256 of the entry ran interpreted
// on a process's first hits (~100 µs of the 0.5 ms a hit may take), and so did taking the header's fields,
// the metadata's text and the code's view out of a Buffer (~20 µs on the development machine). With
// touchAfterMs, a file last modified longer ago than that gets the current time (futimens on the open
// file: one system call, and none for a recent file), so that the cache's size bound, which evicts the
// oldest first, sees it used; best effort, as a read-only folder refuses it.
Napi::Value kernelsReadEntry(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "path must be a string");
  if (info.Length() < 2 || !info[1].IsString()) throw Napi::TypeError::New(env, "key must be a string");
  double touchAfterMs = -1;
  if (info.Length() > 2 && !info[2].IsUndefined()) {
    if (!info[2].IsNumber() || !(info[2].As<Napi::Number>().DoubleValue() >= 0))
      throw Napi::TypeError::New(env, "touchAfterMs must be a number of milliseconds >= 0");
    touchAfterMs = info[2].As<Napi::Number>().DoubleValue();
  }
  const std::string path = info[0].As<Napi::String>().Utf8Value();
  const std::string key = info[1].As<Napi::String>().Utf8Value();
  // open() would stop at a NUL and read another file ("dir/a\0b" is "dir/a"); fs refuses such paths too.
  if (path.find('\0') != std::string::npos) return env.Null();
  // O_NONBLOCK: a FIFO put where an entry belongs must not block the opening (the type check follows).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return env.Null();
  // Closed on every way out, the buffer's allocation throwing included.
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  constexpr off_t kMax = off_t{1} << 31;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMax) return env.Null();
  const size_t size = static_cast<size_t>(st.st_size);
  // Read into memory of our own: only the code goes to JavaScript, as a Buffer of its own. No memory
  // for it is "cannot be read" (the cache compiles instead): a std::bad_alloc escaping to N-API would
  // abort the process, as node-addon-api only turns Napi::Error into a JavaScript exception.
  std::unique_ptr<uint8_t[]> data(new (std::nothrow) uint8_t[size == 0 ? 1 : size]);
  if (!data) return env.Null();
  size_t got = 0;
  while (got < size) {
    const ssize_t r = ::read(fd, data.get() + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  if (got != size) return env.Null();
  nvrtc::EntryLayout layout;
  if (!nvrtc::checkEntry(data.get(), size, key, &layout)) return Napi::Boolean::New(env, false);
  if (touchAfterMs >= 0) {
    struct timespec now;
    if (::clock_gettime(CLOCK_REALTIME, &now) == 0) {
      const double ageMs = static_cast<double>(now.tv_sec - st.st_mtim.tv_sec) * 1e3 +
                           static_cast<double>(now.tv_nsec - st.st_mtim.tv_nsec) / 1e6;
      if (ageMs > touchAfterMs) (void)::futimens(fd, nullptr);
    }
  }
  Napi::Array parts = Napi::Array::New(env, 4);
  parts.Set(0u, Napi::Buffer<uint8_t>::Copy(env, data.get() + layout.codeOffset, layout.codeLength));
  parts.Set(1u, Napi::String::New(env, reinterpret_cast<const char*>(data.get() + layout.metaOffset),
                                  layout.metaLength));
  parts.Set(2u, Napi::Boolean::New(env, layout.cubin));
  parts.Set(3u, Napi::Number::New(env, layout.arch));
  return parts;
}

std::string sizesText(const std::vector<size_t>& sizes) {
  std::string s;
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s;
}

// kernelsGetKernel(library, device, name, displayName, layout: Int32Array [size, kind]…, paramNames,
//                  out: Float64Array) -> kernel handle; `out` receives [bytes, paramsChecked,
//   maxThreadsPerBlock, sharedSizeBytes, maxDynamicSharedSizeBytes, constSizeBytes, localSizeBytes,
//   numRegs, ptxVersion, binaryVersion, offset of each parameter…]. kind: 0 scalar, 1 pointer read,
//   2 pointer written. Numbers in an array the caller made, not an object of thirteen properties: each
//   property set is an N-API call, ~15 µs of a process's second disk hit (lib/kernels/module.ts).
// Where the runtime reports the compiled parameters, a layout that disagrees is refused here: a launch
// with it would hand the kernel garbage.
constexpr size_t kKernelInfoFixed = 10;

Napi::Value kernelsGetKernel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  LibraryState& lib = unwrapLibrary(info.Length() > 0 ? info[0] : env.Undefined());
  const int device = intArg(info, 1, "device");
  const std::string name = stringArg(info, 2, "name");
  const std::string display = stringArg(info, 3, "displayName");
  if (info.Length() <= 4 || !info[4].IsTypedArray() ||
      info[4].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
    throw Napi::TypeError::New(env, "layout must be an Int32Array");
  Napi::Int32Array layout = info[4].As<Napi::Int32Array>();
  const std::vector<std::string> names = stringsArg(info, 5, "paramNames");
  if (layout.ElementLength() != 2 * names.size())
    throw Napi::RangeError::New(env, "layout must hold a size and a kind per parameter");
  if (info.Length() <= 6 || !info[6].IsTypedArray() ||
      info[6].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[6].As<Napi::TypedArray>().ElementLength() != kKernelInfoFixed + names.size())
    throw Napi::TypeError::New(
        env, "out must be a Float64Array of " + std::to_string(kKernelInfoFixed + names.size()) + " numbers");
  Napi::Float64Array out = info[6].As<Napi::Float64Array>();

  auto k = std::make_unique<KernelState>();
  k->device = device;
  k->name = display;
  size_t offset = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    Param p;
    p.name = names[i];
    const int size = layout[2 * i], kind = layout[2 * i + 1];
    if (!(size == 1 || size == 2 || size == 4 || size == 8) || kind < 0 || kind > 2 ||
        (kind != 0 && size != 8))
      throw Napi::RangeError::New(env, "parameter " + p.name + " has an invalid size or kind");
    p.size = static_cast<size_t>(size);
    p.kind = static_cast<ParamKind>(kind);
    offset = (offset + p.size - 1) / p.size * p.size;  // each scalar at its natural alignment
    p.offset = offset;
    offset += p.size;
    if (p.kind != ParamKind::Scalar) k->pointers.push_back(i);
    k->params.push_back(std::move(p));
  }
  k->bytes = (offset + 7) / 8 * 8;
  k->args.assign(k->params.size(), nullptr);

  return guard(env, [&]() -> Napi::Value {
    const nvrtc::KernelAttributes a = nvrtc::getKernel(lib.library, device, name);
    if (a.paramsKnown) {
      std::vector<size_t> ours;
      for (const auto& p : k->params) ours.push_back(p.size);
      if (ours != a.paramSizes)
        throw Napi::TypeError::New(
            env, "kernel " + display + ": its signature gives " + std::to_string(ours.size()) +
                     " parameter(s) of " + sizesText(ours) + " bytes, but the compiled kernel takes " +
                     std::to_string(a.paramSizes.size()) + " of " + sizesText(a.paramSizes) + " bytes");
    }
    k->kernel = a.kernel;
    // What the kernel may take now without opting in: 48 KiB less its static shared memory, not 48 KiB
    // (a launch between the two was not opted in and failed with an invalid argument).
    k->sharedAllowed =
        a.attributes.maxDynamicSharedSizeBytes > 0 ? a.attributes.maxDynamicSharedSizeBytes : 0;
    const double fixed[kKernelInfoFixed] = {static_cast<double>(k->bytes),
                                            a.paramsKnown ? 1.0 : 0.0,
                                            static_cast<double>(a.attributes.maxThreadsPerBlock),
                                            static_cast<double>(a.attributes.sharedSizeBytes),
                                            static_cast<double>(a.attributes.maxDynamicSharedSizeBytes),
                                            static_cast<double>(a.attributes.constSizeBytes),
                                            static_cast<double>(a.attributes.localSizeBytes),
                                            static_cast<double>(a.attributes.numRegs),
                                            static_cast<double>(a.attributes.ptxVersion),
                                            static_cast<double>(a.attributes.binaryVersion)};
    double* o = out.Data();
    std::copy(fixed, fixed + kKernelInfoFixed, o);
    for (size_t i = 0; i < k->params.size(); ++i)
      o[kKernelInfoFixed + i] = static_cast<double>(k->params[i].offset);
    auto handle =
        Napi::External<KernelState>::New(env, k.release(), [](Napi::Env, KernelState* dead) { delete dead; });
    handle.TypeTag(&kKernelTag);
    return handle;
  });
}

// A launch as kernelsLaunch receives it, checked, with the arrays' device pointers written into the
// kernel's packed parameters: what the launch itself needs.
struct PreparedLaunch {
  KernelState* kernel;
  dim3 grid, block;
  uint32_t shared;
};

// The arguments start at index `at`: (kernel, config, params, ...arrays).
PreparedLaunch prepareLaunch(const Napi::CallbackInfo& info, size_t at) {
  Napi::Env env = info.Env();
  KernelState& k = unwrapKernel(info.Length() > at ? info[at] : env.Undefined());
  if (info.Length() <= at + 1 || !info[at + 1].IsTypedArray() ||
      info[at + 1].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array ||
      info[at + 1].As<Napi::TypedArray>().ElementLength() != 7)
    throw Napi::TypeError::New(env, "config must be a Uint32Array of 7");
  Napi::Uint32Array config = info[at + 1].As<Napi::Uint32Array>();
  Napi::Uint8Array params = bytesArg(info, at + 2, "params");
  if (params.ByteLength() != k.bytes)
    throw Napi::RangeError::New(env,
                                "params must be " + std::to_string(k.bytes) + " bytes for kernel " + k.name);
  if (info.Length() < at + 3 || info.Length() - at - 3 != k.pointers.size())
    throw Napi::TypeError::New(
        env, "kernel " + k.name + " takes " + std::to_string(k.pointers.size()) + " array(s)");
  for (int d = 0; d < 6; ++d)
    if (config[d] == 0) throw Napi::RangeError::New(env, "grid and block dimensions must be at least 1");

  uint8_t* base = params.Data();
  for (size_t j = 0; j < k.pointers.size(); ++j) {
    const Param& p = k.params[k.pointers[j]];
    Napi::Value v = info[at + 3 + j];
    void* ptr = nullptr;
    if (!v.IsNull()) {
      DeviceBuffer& b = p.kind == ParamKind::WrittenPointer ? unwrapOutput(v, p.name.c_str())
                                                            : unwrapBuffer(v, p.name.c_str());
      if (b.device != k.device)
        throw Napi::RangeError::New(env, p.name + " is on device " + std::to_string(b.device) +
                                             ", the launch on device " + std::to_string(k.device));
      ptr = b.ptr;
    }
    std::memcpy(base + p.offset, &ptr, sizeof ptr);
  }
  for (size_t i = 0; i < k.params.size(); ++i) k.args[i] = base + k.params[i].offset;
  return {&k, dim3(config[0], config[1], config[2]), dim3(config[3], config[4], config[5]), config[6]};
}

void launchPrepared(const PreparedLaunch& l) {
  KernelState& k = *l.kernel;
  cudaStream_t stream = libraryStream(k.device);
  if (l.shared > static_cast<uint32_t>(k.sharedAllowed)) {
    nvrtc::allowSharedMemory(k.kernel, k.device, static_cast<int>(l.shared));
    k.sharedAllowed = static_cast<int>(l.shared);
  }
  nvrtc::launch(k.kernel, l.grid, l.block, k.args.empty() ? nullptr : k.args.data(), l.shared, stream);
}

// kernelsLaunch(kernel, config: Uint32Array [gx, gy, gz, bx, by, bz, sharedMem], params: Uint8Array,
//               ...arrays: (handle | null)[]) — one call per launch: the scalars arrive packed at the
// offsets kernelsGetKernel gave, the arrays' device pointers are written into their slots here.
Napi::Value kernelsLaunch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const PreparedLaunch l = prepareLaunch(info, 0);
  guard(env, [&] { launchPrepared(l); });
  return env.Undefined();
}

#ifdef CK_TEST_HOOKS
// debugKernelLaunchLoop(reps, kernel, config, params, ...arrays) -> Float64Array of µs: the launch of
// kernelsLaunch and a cudaDeviceSynchronize (what synchronize() does), `reps` times in C++, each timed
// on the host's clock. Inside the Node process, beside the same launch and synchronize() from
// JavaScript, it splits the JavaScript/N-API share of a launch+sync from the process's (test hook).
Napi::Value debugKernelLaunchLoop(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int reps = intArg(info, 0, "reps");
  if (reps < 1 || reps > 1000000) throw Napi::RangeError::New(env, "reps must be in [1, 1000000]");
  const PreparedLaunch l = prepareLaunch(info, 1);
  std::vector<double> times(static_cast<size_t>(reps));
  guard(env, [&] {
    for (double& us : times) {
      const auto t0 = std::chrono::steady_clock::now();
      launchPrepared(l);
      libraryStream(l.kernel->device);  // as synchronize() does: the device current, no holds left
      CK_CUDA(cudaDeviceSynchronize());
      us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    }
  });
  Napi::Float64Array out = Napi::Float64Array::New(env, times.size());
  std::memcpy(out.Data(), times.data(), times.size() * sizeof(double));
  return out;
}
#endif

// kernelsDeviceInfo(device) -> { major, minor, smCount, maxThreadsPerBlock, maxBlockDim, maxGridDim,
// sharedMemPerBlockOptin }: what compiling for and launching on a device needs, from single attribute
// queries (cudaGetDeviceProperties fills every field and costs far more: a first call in a fresh
// process should not pay for it).
Napi::Value kernelsDeviceInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = intArg(info, 0, "device");
  return guard(env, [&]() -> Napi::Value {
    useDevice(device);
    const auto attr = [&](cudaDeviceAttr a, const char* name) {
      int v = 0;
      check(cudaDeviceGetAttribute(&v, a, device), name);
      return v;
    };
    auto o = Napi::Object::New(env);
    o.Set("major", attr(cudaDevAttrComputeCapabilityMajor, "cudaDeviceGetAttribute(ComputeCapabilityMajor)"));
    o.Set("minor", attr(cudaDevAttrComputeCapabilityMinor, "cudaDeviceGetAttribute(ComputeCapabilityMinor)"));
    o.Set("smCount", attr(cudaDevAttrMultiProcessorCount, "cudaDeviceGetAttribute(MultiProcessorCount)"));
    o.Set("maxThreadsPerBlock",
          attr(cudaDevAttrMaxThreadsPerBlock, "cudaDeviceGetAttribute(MaxThreadsPerBlock)"));
    auto block = Napi::Array::New(env, 3), grid = Napi::Array::New(env, 3);
    block.Set(0u, attr(cudaDevAttrMaxBlockDimX, "cudaDeviceGetAttribute(MaxBlockDimX)"));
    block.Set(1u, attr(cudaDevAttrMaxBlockDimY, "cudaDeviceGetAttribute(MaxBlockDimY)"));
    block.Set(2u, attr(cudaDevAttrMaxBlockDimZ, "cudaDeviceGetAttribute(MaxBlockDimZ)"));
    grid.Set(0u, attr(cudaDevAttrMaxGridDimX, "cudaDeviceGetAttribute(MaxGridDimX)"));
    grid.Set(1u, attr(cudaDevAttrMaxGridDimY, "cudaDeviceGetAttribute(MaxGridDimY)"));
    grid.Set(2u, attr(cudaDevAttrMaxGridDimZ, "cudaDeviceGetAttribute(MaxGridDimZ)"));
    o.Set("maxBlockDim", block);
    o.Set("maxGridDim", grid);
    o.Set("sharedMemPerBlockOptin", attr(cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                         "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)"));
    return o;
  });
}

}  // namespace

void registerNvrtc(Napi::Env env, Napi::Object exports) {
  exports.Set("nvrtcInfo", Napi::Function::New(env, nvrtcInfo, "nvrtcInfo"));
  exports.Set("nvrtcLocate", Napi::Function::New(env, nvrtcLocate, "nvrtcLocate"));
  exports.Set("nvrtcCompile", Napi::Function::New(env, nvrtcCompile, "nvrtcCompile"));
  exports.Set("nvrtcCompileAsync", Napi::Function::New(env, nvrtcCompileAsync, "nvrtcCompileAsync"));
  exports.Set("kernelsLoad", Napi::Function::New(env, kernelsLoad, "kernelsLoad"));
  exports.Set("kernelsReadEntry", Napi::Function::New(env, kernelsReadEntry, "kernelsReadEntry"));
  exports.Set("kernelsGetKernel", Napi::Function::New(env, kernelsGetKernel, "kernelsGetKernel"));
  exports.Set("kernelsLaunch", Napi::Function::New(env, kernelsLaunch, "kernelsLaunch"));
#ifdef CK_TEST_HOOKS
  exports.Set("debugKernelLaunchLoop",
              Napi::Function::New(env, debugKernelLaunchLoop, "debugKernelLaunchLoop"));
#endif
  exports.Set("kernelsDeviceInfo", Napi::Function::New(env, kernelsDeviceInfo, "kernelsDeviceInfo"));
}

}  // namespace ck
