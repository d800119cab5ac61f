/* IncrementalAlterConfigs, which came in librdkafka 2.2.0: pyrdk_admin.c. */
#ifndef PYRDK_ADMIN_H
#define PYRDK_ADMIN_H

#include <stddef.h>
#include <librdkafka/rdkafka.h>

/* 1 if the running librdkafka has IncrementalAlterConfigs, else 0. */
int pyrdk_incremental_alter_available(void);
/* rd_kafka_ConfigResource_add_incremental_config(); op: 0 set, 1 delete, 2 append, 3 subtract. */
rd_kafka_error_t *pyrdk_add_incremental_config(rd_kafka_ConfigResource_t *config, const char *name,
                                               int op, const char *value);
/* rd_kafka_IncrementalAlterConfigs(). */
void pyrdk_incremental_alter_configs(rd_kafka_t *rk, rd_kafka_ConfigResource_t **configs, size_t config_cnt,
                                     const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu);
/* The resources of an IncrementalAlterConfigs result event, or NULL for another event. */
const rd_kafka_ConfigResource_t **pyrdk_incremental_alter_result(rd_kafka_event_t *rkev, size_t *cntp);

#endif
