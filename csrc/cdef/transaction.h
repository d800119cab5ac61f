/* The transactional producer and the consumer group metadata it commits offsets with:
 * pyrdk/rd/transaction.py */
typedef struct rd_kafka_consumer_group_metadata_s rd_kafka_consumer_group_metadata_t;

rd_kafka_error_t *rd_kafka_init_transactions(rd_kafka_t *rk, int timeout_ms);
rd_kafka_error_t *rd_kafka_begin_transaction(rd_kafka_t *rk);
rd_kafka_error_t *rd_kafka_send_offsets_to_transaction(
        rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *offsets,
        const rd_kafka_consumer_group_metadata_t *cgmetadata, int timeout_ms);
rd_kafka_error_t *rd_kafka_commit_transaction(rd_kafka_t *rk, int timeout_ms);
rd_kafka_error_t *rd_kafka_abort_transaction(rd_kafka_t *rk, int timeout_ms);

rd_kafka_consumer_group_metadata_t *rd_kafka_consumer_group_metadata(rd_kafka_t *rk);
rd_kafka_consumer_group_metadata_t *rd_kafka_consumer_group_metadata_new(const char *group_id);
void rd_kafka_consumer_group_metadata_destroy(rd_kafka_consumer_group_metadata_t *);
