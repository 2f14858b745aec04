/* specd ABI — version numbers and export macros.
 *
 * The ABI is versioned MAJOR.MINOR. A plugin built against major M loads only into a host
 * of major M. Minor versions only append: new functions at the end of a vtable, new fields
 * at the end of a struct (each struct starts with `struct_size`, so the reader can tell
 * which fields exist). A host reads a plugin's minor before calling anything newer than
 * minor 1; a plugin reads the host's minor from the host table before calling anything
 * newer. sdk/CHANGELOG.md records every minor.
 *
 * Thread rule: constants only.
 */
#ifndef SPECD_VERSION_H
#define SPECD_VERSION_H

#define SPECD_ABI_VERSION_MAJOR 0u
#define SPECD_ABI_VERSION_MINOR 8u

#if defined(_WIN32)
#define SPECD_EXPORT __declspec(dllexport)
#else
#define SPECD_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
#define SPECD_EXTERN_C extern "C"
#define SPECD_EXTERN_C_BEGIN extern "C" {
#define SPECD_EXTERN_C_END }
#else
#define SPECD_EXTERN_C
#define SPECD_EXTERN_C_BEGIN
#define SPECD_EXTERN_C_END
#endif

/* Compile-time layout check usable from C11 and C++. */
#ifdef __cplusplus
#define SPECD_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define SPECD_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#endif /* SPECD_VERSION_H */
