/* C helpers compiled into the module from csrc/pyrdk_helpers.c. */

rd_kafka_resp_err_t pyrdk_produce(rd_kafka_t *rk, rd_kafka_topic_t *rkt, int32_t partition,
                                  const void *value, size_t value_len, const void *key, size_t key_len,
                                  int64_t timestamp, rd_kafka_headers_t *headers, void *opaque, int block);
