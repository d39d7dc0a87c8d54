// thread_annotations.h — clang's thread-safety attributes as macros (GUARDED_BY, REQUIRES, ...).
// Under clang with -Wthread-safety (scripts/check-thread-safety) the compiler proves that each
// guarded field is touched only with its mutex held; under other compilers they expand to nothing.
#pragma once

#if defined(__clang__)
#define KEVIN_THREAD_ATTRIBUTE(x) __attribute__((x))
#else
#define KEVIN_THREAD_ATTRIBUTE(x)
#endif

// On a class: objects of it are a capability (a mutex) named `x` in diagnostics.
#define CAPABILITY(x) KEVIN_THREAD_ATTRIBUTE(capability(x))
// On an RAII class: constructing it acquires, destroying it releases.
#define SCOPED_CAPABILITY KEVIN_THREAD_ATTRIBUTE(scoped_lockable)
// On a field: read or written only while holding the given mutex.
#define GUARDED_BY(x) KEVIN_THREAD_ATTRIBUTE(guarded_by(x))
// On a pointer field: what it points to is read or written only while holding the mutex.
#define PT_GUARDED_BY(x) KEVIN_THREAD_ATTRIBUTE(pt_guarded_by(x))
// On a mutex field: a thread holding it must not then take the given mutexes before it.
#define ACQUIRED_BEFORE(...) KEVIN_THREAD_ATTRIBUTE(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) KEVIN_THREAD_ATTRIBUTE(acquired_after(__VA_ARGS__))
// On a function: the caller must hold the mutexes (exclusively / at least shared).
#define REQUIRES(...) KEVIN_THREAD_ATTRIBUTE(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) KEVIN_THREAD_ATTRIBUTE(requires_shared_capability(__VA_ARGS__))
// On a function: it takes / releases the mutexes (no argument: `this`).
#define ACQUIRE(...) KEVIN_THREAD_ATTRIBUTE(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) KEVIN_THREAD_ATTRIBUTE(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) KEVIN_THREAD_ATTRIBUTE(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) KEVIN_THREAD_ATTRIBUTE(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) KEVIN_THREAD_ATTRIBUTE(release_generic_capability(__VA_ARGS__))
// On a function: the caller must not hold the mutexes (it takes them itself).
#define EXCLUDES(...) KEVIN_THREAD_ATTRIBUTE(locks_excluded(__VA_ARGS__))
// On a function: it returns a reference to the given mutex.
#define RETURN_CAPABILITY(x) KEVIN_THREAD_ATTRIBUTE(lock_returned(x))
// On a function whose locking the analysis cannot follow; say why beside each use.
#define NO_THREAD_SAFETY_ANALYSIS KEVIN_THREAD_ATTRIBUTE(no_thread_safety_analysis)
