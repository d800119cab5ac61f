/* Declarations of the C helpers in pyrdk_helpers.c. */
#ifndef PYRDK_HELPERS_H
#define PYRDK_HELPERS_H

#include <librdkafka/rdkafka.h>

rd_kafka_resp_err_t pyrdk_produce(rd_kafka_t *rk, rd_kafka_topic_t *rkt, int32_t partition,
                                  const void *value, size_t value_len, const void *key, size_t key_len,
                                  int64_t timestamp, rd_kafka_headers_t *headers, void *opaque, int block);

#endif
