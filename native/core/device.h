// Devices and the library's streams, shared by every family's launchers.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace ck {

// What the CUDA runtime said when first asked, computed once per process.
struct RuntimeStatus {
  int runtimeVersion = 0;  // CUDART_VERSION this binary was built with, e.g. 13000
  int driverVersion = 0;   // highest CUDA version the installed driver supports, 0 without a driver
  int deviceCount = 0;
  std::string code;    // cudaGetErrorName of the failure behind deviceCount == 0, empty otherwise
  std::string reason;  // readable explanation of deviceCount == 0, empty otherwise
};

const RuntimeStatus& runtimeStatus();

// Makes `device` current on the calling thread, or throws CudaFailure saying why it cannot be used
// (no device, driver too old, index out of range).
void useDevice(int device);

// The stream on which the library enqueues all work for `device` (non-blocking, created on first
// use, never destroyed). Makes the device current. While operations are held for the stream
// (holdLibraryStream), waits until they have been queued, so that nothing called after them runs
// before them.
cudaStream_t libraryStream(int device);

// Holds: operations called on the JavaScript thread that another thread queues on the library stream
// later, in the place they were called (a collective beyond its communicator's operations in flight,
// distributed/comm.h, queued by the communicator's thread when one completes). While `holder` holds
// any, libraryStream(device) waits in every thread, libraryStreamFor(device, holder) does not.
// releaseLibraryStream(device, holder, n) drops n of them (all: n < 0) and wakes the waiters.
void holdLibraryStream(int device, const void* holder);
void releaseLibraryStream(int device, const void* holder, int n);
// libraryStream for `holder`: waits only for other holders' operations.
cudaStream_t libraryStreamFor(int device, const void* holder);
// Whether anything holds `device`'s library stream now (libraryStream would wait); never waits.
bool libraryStreamHeld(int device);
// libraryStream without the wait, for work whose place on the stream does not matter to anything
// held: a stream-ordered allocation (nothing queued before it can use the memory it returns), the
// free of memory no held operation uses (buffer.cc), synchronizeAsync's event while nothing is
// held (while something is, its pool thread records it through libraryStream, after the holds).
cudaStream_t libraryStreamUnheld(int device);

// A second stream per device for the host side of asynchronous transfers (toHost() of large arrays
// into pageable memory), so that they do not queue behind later work on the library stream. Work on
// it waits for the library stream's events where it reads what the library stream wrote.
cudaStream_t transferStream(int device);

// "13.0" from 13000.
std::string versionString(int cudaVersion);

}  // namespace ck
