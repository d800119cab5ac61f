/* rd_kafka_conf_t and rd_kafka_topic_conf_t: pyrdk/rd/conf.py */
rd_kafka_conf_t *rd_kafka_conf_new(void);
void rd_kafka_conf_destroy(rd_kafka_conf_t *conf);
rd_kafka_conf_res_t rd_kafka_conf_set(rd_kafka_conf_t *conf, const char *name,
                                      const char *value, char *errstr, size_t errstr_size);
rd_kafka_conf_res_t rd_kafka_conf_get(const rd_kafka_conf_t *conf, const char *name,
                                      char *dest, size_t *dest_size);
void rd_kafka_conf_set_opaque(rd_kafka_conf_t *conf, void *opaque);
void rd_kafka_conf_set_dr_msg_cb(rd_kafka_conf_t *conf,
        void (*dr_msg_cb)(rd_kafka_t *rk, const rd_kafka_message_t *rkmessage, void *opaque));
void rd_kafka_conf_set_error_cb(rd_kafka_conf_t *conf,
        void (*error_cb)(rd_kafka_t *rk, int err, const char *reason, void *opaque));
void rd_kafka_conf_set_log_cb(rd_kafka_conf_t *conf,
        void (*log_cb)(const rd_kafka_t *rk, int level, const char *fac, const char *buf));
void rd_kafka_conf_set_stats_cb(rd_kafka_conf_t *conf,
        int (*stats_cb)(rd_kafka_t *rk, char *json, size_t json_len, void *opaque));
void rd_kafka_conf_set_rebalance_cb(rd_kafka_conf_t *conf,
        void (*rebalance_cb)(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t *partitions, void *opaque));
void rd_kafka_conf_set_offset_commit_cb(rd_kafka_conf_t *conf,
        void (*offset_commit_cb)(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                                 rd_kafka_topic_partition_list_t *offsets, void *opaque));

rd_kafka_topic_conf_t *rd_kafka_topic_conf_new(void);
void rd_kafka_topic_conf_destroy(rd_kafka_topic_conf_t *topic_conf);
rd_kafka_conf_res_t rd_kafka_topic_conf_set(rd_kafka_topic_conf_t *conf, const char *name,
                                            const char *value, char *errstr, size_t errstr_size);

/* SASL OAUTHBEARER tokens and TLS certificate checks: pyrdk/rd/callbacks.py */
void rd_kafka_conf_set_oauthbearer_token_refresh_cb(rd_kafka_conf_t *conf,
        void (*oauthbearer_token_refresh_cb)(rd_kafka_t *rk, const char *oauthbearer_config,
                                             void *opaque));
void rd_kafka_conf_enable_sasl_queue(rd_kafka_conf_t *conf, int enable);
rd_kafka_conf_res_t rd_kafka_conf_set_ssl_cert_verify_cb(rd_kafka_conf_t *conf,
        int (*ssl_cert_verify_cb)(rd_kafka_t *rk, const char *broker_name, int32_t broker_id,
                                  int *x509_error, int depth, const char *buf, size_t size,
                                  char *errstr, size_t errstr_size, void *opaque));
