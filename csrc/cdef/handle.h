/* rd_kafka_t: pyrdk/rd/handle.py */
int rd_kafka_version(void);
const char *rd_kafka_version_str(void);
rd_kafka_t *rd_kafka_new(rd_kafka_type_t type, rd_kafka_conf_t *conf, char *errstr, size_t errstr_size);
void rd_kafka_destroy(rd_kafka_t *rk);
void rd_kafka_destroy_flags(rd_kafka_t *rk, int flags);
const char *rd_kafka_name(const rd_kafka_t *rk);
void *rd_kafka_opaque(const rd_kafka_t *rk);
int rd_kafka_poll(rd_kafka_t *rk, int timeout_ms);
rd_kafka_resp_err_t rd_kafka_flush(rd_kafka_t *rk, int timeout_ms);
rd_kafka_resp_err_t rd_kafka_purge(rd_kafka_t *rk, int purge_flags);
int rd_kafka_outq_len(rd_kafka_t *rk);
char *rd_kafka_memberid(const rd_kafka_t *rk);
char *rd_kafka_clusterid(rd_kafka_t *rk, int timeout_ms);
int32_t rd_kafka_controllerid(rd_kafka_t *rk, int timeout_ms);
rd_kafka_resp_err_t rd_kafka_set_log_queue(rd_kafka_t *rk, rd_kafka_queue_t *rkqu);
rd_kafka_resp_err_t rd_kafka_fatal_error(rd_kafka_t *rk, char *errstr, size_t errstr_size);
rd_kafka_resp_err_t rd_kafka_test_fatal_error(rd_kafka_t *rk, rd_kafka_resp_err_t err, const char *reason);
void rd_kafka_mem_free(rd_kafka_t *rk, void *ptr);
rd_kafka_resp_err_t rd_kafka_query_watermark_offsets(rd_kafka_t *rk, const char *topic,
        int32_t partition, int64_t *low, int64_t *high, int timeout_ms);
rd_kafka_resp_err_t rd_kafka_get_watermark_offsets(rd_kafka_t *rk, const char *topic,
        int32_t partition, int64_t *low, int64_t *high);
rd_kafka_resp_err_t rd_kafka_offsets_for_times(rd_kafka_t *rk,
        rd_kafka_topic_partition_list_t *offsets, int timeout_ms);
rd_kafka_resp_err_t rd_kafka_oauthbearer_set_token(rd_kafka_t *rk, const char *token_value,
        int64_t md_lifetime_ms, const char *md_principal_name, const char **extensions,
        size_t extension_size, char *errstr, size_t errstr_size);
rd_kafka_resp_err_t rd_kafka_oauthbearer_set_token_failure(rd_kafka_t *rk, const char *errstr);
rd_kafka_error_t *rd_kafka_sasl_background_callbacks_enable(rd_kafka_t *rk);
