/* IncrementalAlterConfigs (KIP-339) came in librdkafka 2.2.0, after the rdkafka.h that pyrdk
 * may be built against (Debian bookworm ships 2.0.2), while the library pyrdk runs (the one
 * in the confluent-kafka wheel) is newer. Built against headers that have it, these wrappers
 * call it directly and the compiler checks every call; built against older headers, they
 * look the four functions up in the running library (dlsym) with the signatures librdkafka
 * has kept since 2.2.0, and pyrdk_incremental_alter_available() says whether it has them.
 * AlterConfigs is no substitute: it replaces every override of the resource. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>

#include "pyrdk_admin.h"

#if RD_KAFKA_VERSION >= 0x020200ff

int pyrdk_incremental_alter_available(void) {
        return rd_kafka_version() >= 0x020200ff;
}

rd_kafka_error_t *pyrdk_add_incremental_config(rd_kafka_ConfigResource_t *config, const char *name,
                                               int op, const char *value) {
        return rd_kafka_ConfigResource_add_incremental_config(config, name, (rd_kafka_AlterConfigOpType_t)op,
                                                              value);
}

void pyrdk_incremental_alter_configs(rd_kafka_t *rk, rd_kafka_ConfigResource_t **configs, size_t config_cnt,
                                     const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu) {
        rd_kafka_IncrementalAlterConfigs(rk, configs, config_cnt, options, rkqu);
}

const rd_kafka_ConfigResource_t **pyrdk_incremental_alter_result(rd_kafka_event_t *rkev, size_t *cntp) {
        const rd_kafka_IncrementalAlterConfigs_result_t *res = rd_kafka_event_IncrementalAlterConfigs_result(rkev);
        *cntp = 0;
        return res ? rd_kafka_IncrementalAlterConfigs_result_resources(res, cntp) : NULL;
}

#else

typedef rd_kafka_error_t *(*add_fn)(rd_kafka_ConfigResource_t *, const char *, int, const char *);
typedef void (*alter_fn)(rd_kafka_t *, rd_kafka_ConfigResource_t **, size_t, const rd_kafka_AdminOptions_t *,
                         rd_kafka_queue_t *);
typedef const void *(*event_fn)(rd_kafka_event_t *);
typedef const rd_kafka_ConfigResource_t **(*resources_fn)(const void *, size_t *);

/* The running library's function of that name, looked up at each call: these are admin
 * calls, rare enough that no state needs keeping. */
static void *running(const char *name) {
        return dlsym(RTLD_DEFAULT, name);
}

int pyrdk_incremental_alter_available(void) {
        return running("rd_kafka_ConfigResource_add_incremental_config") &&
               running("rd_kafka_IncrementalAlterConfigs") &&
               running("rd_kafka_event_IncrementalAlterConfigs_result") &&
               running("rd_kafka_IncrementalAlterConfigs_result_resources");
}

rd_kafka_error_t *pyrdk_add_incremental_config(rd_kafka_ConfigResource_t *config, const char *name,
                                               int op, const char *value) {
        add_fn add;

        if (!pyrdk_incremental_alter_available())
                return rd_kafka_error_new(RD_KAFKA_RESP_ERR__NOT_IMPLEMENTED,
                                          "IncrementalAlterConfigs needs librdkafka 2.2.0 or later");
        add = (add_fn)running("rd_kafka_ConfigResource_add_incremental_config");
        return add(config, name, op, value);
}

void pyrdk_incremental_alter_configs(rd_kafka_t *rk, rd_kafka_ConfigResource_t **configs, size_t config_cnt,
                                     const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu) {
        if (pyrdk_incremental_alter_available())
                ((alter_fn)running("rd_kafka_IncrementalAlterConfigs"))(rk, configs, config_cnt, options, rkqu);
}

const rd_kafka_ConfigResource_t **pyrdk_incremental_alter_result(rd_kafka_event_t *rkev, size_t *cntp) {
        const void *res;

        *cntp = 0;
        if (!pyrdk_incremental_alter_available())
                return NULL;
        res = ((event_fn)running("rd_kafka_event_IncrementalAlterConfigs_result"))(rkev);
        return res ? ((resources_fn)running("rd_kafka_IncrementalAlterConfigs_result_resources"))(res, cntp) : NULL;
}

#endif
