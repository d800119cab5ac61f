/* A handle's use guard, shared by the cffi module and the C core (pyrdk._core): the
 * per-message calls enter it instead of taking a Python lock. pyrdk_guard_enter() fails
 * once pyrdk_guard_close() has run, and Handle.close() waits for pyrdk_guard_users() to
 * reach 0 before rd_kafka_destroy(). Sequentially consistent atomics: either enter sees
 * closing set, or close's caller sees the user and waits for it. The struct lives in
 * memory the Handle owns (cffi's ffi.new). */
#ifndef PYRDK_GUARD_H
#define PYRDK_GUARD_H

/* What a guarded call returns when the handle is closed (pyrdk.rd.handle understands it). */
enum { PYRDK_ERR_CLOSED = -10000 };

typedef struct pyrdk_guard_s {
        int users;
        int closing;
} pyrdk_guard_t;

static inline void pyrdk_guard_leave(pyrdk_guard_t *g) {
        __atomic_sub_fetch(&g->users, 1, __ATOMIC_SEQ_CST);
}

static inline int pyrdk_guard_enter(pyrdk_guard_t *g) {
        __atomic_add_fetch(&g->users, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&g->closing, __ATOMIC_SEQ_CST)) {
                pyrdk_guard_leave(g);
                return 0;
        }
        return 1;
}

static inline void pyrdk_guard_close(pyrdk_guard_t *g) {
        __atomic_store_n(&g->closing, 1, __ATOMIC_SEQ_CST);
}

static inline int pyrdk_guard_users(pyrdk_guard_t *g) {
        return __atomic_load_n(&g->users, __ATOMIC_SEQ_CST);
}

static inline int pyrdk_guard_closing(pyrdk_guard_t *g) {
        return __atomic_load_n(&g->closing, __ATOMIC_SEQ_CST);
}

#endif
