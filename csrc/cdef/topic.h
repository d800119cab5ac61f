/* rd_kafka_topic_t: pyrdk/rd/topic.py */
rd_kafka_topic_t *rd_kafka_topic_new(rd_kafka_t *rk, const char *topic, rd_kafka_topic_conf_t *conf);
void rd_kafka_topic_destroy(rd_kafka_topic_t *rkt);
const char *rd_kafka_topic_name(const rd_kafka_topic_t *rkt);
int32_t rd_kafka_msg_partitioner_murmur2(const rd_kafka_topic_t *rkt, const void *key, size_t keylen,
                                         int32_t partition_cnt, void *rkt_opaque, void *msg_opaque);
int32_t rd_kafka_msg_partitioner_consistent(const rd_kafka_topic_t *rkt, const void *key, size_t keylen,
                                            int32_t partition_cnt, void *rkt_opaque, void *msg_opaque);
int rd_kafka_produce_batch(rd_kafka_topic_t *rkt, int32_t partition, int msgflags,
                           rd_kafka_message_t *rkmessages, int message_cnt);
