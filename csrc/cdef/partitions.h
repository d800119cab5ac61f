/* rd_kafka_topic_partition_list_t: pyrdk/rd/partitions.py */
rd_kafka_topic_partition_list_t *rd_kafka_topic_partition_list_new(int size);
void rd_kafka_topic_partition_list_destroy(rd_kafka_topic_partition_list_t *rkparlist);
rd_kafka_topic_partition_t *rd_kafka_topic_partition_list_add(rd_kafka_topic_partition_list_t *rktparlist,
                                                             const char *topic, int32_t partition);
/* the allocator librdkafka frees a topic-partition's metadata with */
void *rd_kafka_mem_malloc(rd_kafka_t *rk, size_t size);
