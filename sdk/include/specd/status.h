/* specd ABI — errors.
 *
 * Every fallible ABI function returns `specd_status*`: NULL means success; non-NULL is an
 * error object created by the host (host->status_create, see host.h), which copies the
 * message. Ownership of a returned status passes to the caller, who releases it with
 * host->status_free (the host does this for statuses that plugins return to it).
 * No C++ exception ever crosses the ABI: the C++ helpers in specd/cpp/ catch and convert.
 *
 * Thread rule: a status object is owned by one thread at a time.
 */
#ifndef SPECD_STATUS_H
#define SPECD_STATUS_H

#include <stdint.h>

#include "specd/version.h"

SPECD_EXTERN_C_BEGIN

/* Opaque; created and freed only by the host. */
typedef struct specd_status specd_status;

/* Error codes (fixed width; values are frozen). */
typedef uint32_t specd_status_code;
#define SPECD_STATUS_INVALID_ARGUMENT ((specd_status_code)1) /* bad input or parameters */
#define SPECD_STATUS_UNSUPPORTED ((specd_status_code)2)      /* valid, but not supported here */
#define SPECD_STATUS_UNAVAILABLE ((specd_status_code)3)      /* resource/device missing */
#define SPECD_STATUS_OUT_OF_MEMORY ((specd_status_code)4)    /* an allocation failed */
#define SPECD_STATUS_INTERNAL ((specd_status_code)5)         /* a bug or broken invariant */
#define SPECD_STATUS_IO ((specd_status_code)6)               /* file or stream error */

SPECD_EXTERN_C_END

#endif /* SPECD_STATUS_H */
