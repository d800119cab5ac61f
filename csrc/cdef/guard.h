/* The use guard of csrc/pyrdk_guard.h (static inline there): pyrdk/rd/handle.py; and what
 * the guarded calls (the cffi module's and the C core's) return once it is closed. */
typedef struct pyrdk_guard_s {
        int users;
        int closing;
} pyrdk_guard_t;
int pyrdk_guard_enter(pyrdk_guard_t *g);
void pyrdk_guard_leave(pyrdk_guard_t *g);
void pyrdk_guard_close(pyrdk_guard_t *g);
int pyrdk_guard_users(pyrdk_guard_t *g);
#define PYRDK_ERR_CLOSED ...
