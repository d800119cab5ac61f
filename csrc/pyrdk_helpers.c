/* C glue compiled into pyrdk._rdkafka: calls cffi cannot make directly (variadic ones). */
#include "pyrdk_helpers.h"

/* One message through rd_kafka_producev(), which is variadic and so out of cffi's reach.
 * The payload and key are copied (RD_KAFKA_MSG_F_COPY). On success librdkafka owns
 * the headers; on failure they are destroyed here, so the caller never frees them. */
rd_kafka_resp_err_t pyrdk_produce(rd_kafka_t *rk, rd_kafka_topic_t *rkt, int32_t partition,
                                  const void *value, size_t value_len, const void *key, size_t key_len,
                                  int64_t timestamp, rd_kafka_headers_t *headers, void *opaque, int block) {
        rd_kafka_resp_err_t err;
        int flags = RD_KAFKA_MSG_F_COPY | (block ? RD_KAFKA_MSG_F_BLOCK : 0);

        if (headers)
                err = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(partition),
                                        RD_KAFKA_V_MSGFLAGS(flags),
                                        RD_KAFKA_V_VALUE((void *)value, value_len),
                                        RD_KAFKA_V_KEY(key, key_len),
                                        RD_KAFKA_V_TIMESTAMP(timestamp),
                                        RD_KAFKA_V_HEADERS(headers),
                                        RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
        else
                err = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(partition),
                                        RD_KAFKA_V_MSGFLAGS(flags),
                                        RD_KAFKA_V_VALUE((void *)value, value_len),
                                        RD_KAFKA_V_KEY(key, key_len),
                                        RD_KAFKA_V_TIMESTAMP(timestamp),
                                        RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
        if (err && headers)
                rd_kafka_headers_destroy(headers);
        return err;
}
