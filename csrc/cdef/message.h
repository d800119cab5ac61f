/* rd_kafka_message_t and rd_kafka_headers_t: pyrdk/rd/message.py */
void rd_kafka_message_destroy(rd_kafka_message_t *rkmessage);
int64_t rd_kafka_message_timestamp(const rd_kafka_message_t *rkmessage, rd_kafka_timestamp_type_t *tstype);
rd_kafka_resp_err_t rd_kafka_message_headers(const rd_kafka_message_t *rkmessage, rd_kafka_headers_t **hdrsp);
rd_kafka_headers_t *rd_kafka_headers_new(size_t initial_count);
void rd_kafka_headers_destroy(rd_kafka_headers_t *hdrs);
rd_kafka_resp_err_t rd_kafka_header_add(rd_kafka_headers_t *hdrs, const char *name, ssize_t name_size,
                                        const void *value, ssize_t value_size);
rd_kafka_resp_err_t rd_kafka_header_get_all(const rd_kafka_headers_t *hdrs, size_t idx,
                                            const char **namep, const void **valuep, size_t *sizep);
size_t rd_kafka_header_cnt(const rd_kafka_headers_t *hdrs);
