/* Trampolines into Python, defined with @ffi.def_extern in pyrdk/rd/callbacks.py.
 * librdkafka calls them from rd_kafka_poll() / rd_kafka_consumer_poll(), in the polling thread. */
extern "Python" void _pyrdk_error_cb(rd_kafka_t *, int, const char *, void *);
extern "Python" void _pyrdk_log_cb(const rd_kafka_t *, int, const char *, const char *);
extern "Python" int _pyrdk_stats_cb(rd_kafka_t *, char *, size_t, void *);
/* Called by pyrdk_rebalance_cb() in pyrdk_helpers.c (hence "Python+C"), which assigns or
 * revokes itself when the trampoline did not (*done still 0). */
extern "Python+C" void _pyrdk_rebalance_cb(rd_kafka_t *, rd_kafka_resp_err_t,
                                           rd_kafka_topic_partition_list_t *, void *, int *);
extern "Python" void _pyrdk_offset_commit_cb(rd_kafka_t *, rd_kafka_resp_err_t,
                                             rd_kafka_topic_partition_list_t *, void *);
/* These two may also run on a librdkafka thread (the background thread for token refreshes,
 * a broker thread for certificate checks): cffi takes the GIL for them. */
extern "Python" void _pyrdk_oauthbearer_cb(rd_kafka_t *, const char *, void *);
extern "Python" int _pyrdk_ssl_verify_cb(rd_kafka_t *, const char *, int32_t, int *, int,
                                         const char *, size_t, char *, size_t, void *);
