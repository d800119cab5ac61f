/* The Admin API (CreateTopics, DeleteTopics, DescribeConsumerGroups): pyrdk/rd/admin.py */
rd_kafka_AdminOptions_t *rd_kafka_AdminOptions_new(rd_kafka_t *rk, rd_kafka_admin_op_t for_api);
void rd_kafka_AdminOptions_destroy(rd_kafka_AdminOptions_t *options);
rd_kafka_resp_err_t rd_kafka_AdminOptions_set_request_timeout(rd_kafka_AdminOptions_t *options,
        int timeout_ms, char *errstr, size_t errstr_size);
rd_kafka_resp_err_t rd_kafka_AdminOptions_set_operation_timeout(rd_kafka_AdminOptions_t *options,
        int timeout_ms, char *errstr, size_t errstr_size);

rd_kafka_NewTopic_t *rd_kafka_NewTopic_new(const char *topic, int num_partitions, int replication_factor,
                                           char *errstr, size_t errstr_size);
void rd_kafka_NewTopic_destroy(rd_kafka_NewTopic_t *new_topic);
rd_kafka_resp_err_t rd_kafka_NewTopic_set_config(rd_kafka_NewTopic_t *new_topic, const char *name,
                                                 const char *value);
void rd_kafka_CreateTopics(rd_kafka_t *rk, rd_kafka_NewTopic_t **new_topics, size_t new_topic_cnt,
                           const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu);
const rd_kafka_CreateTopics_result_t *rd_kafka_event_CreateTopics_result(rd_kafka_event_t *rkev);
const rd_kafka_topic_result_t **rd_kafka_CreateTopics_result_topics(
        const rd_kafka_CreateTopics_result_t *result, size_t *cntp);

rd_kafka_DeleteTopic_t *rd_kafka_DeleteTopic_new(const char *topic);
void rd_kafka_DeleteTopic_destroy(rd_kafka_DeleteTopic_t *del_topic);
void rd_kafka_DeleteTopics(rd_kafka_t *rk, rd_kafka_DeleteTopic_t **del_topics, size_t del_topic_cnt,
                           const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu);
const rd_kafka_DeleteTopics_result_t *rd_kafka_event_DeleteTopics_result(rd_kafka_event_t *rkev);
const rd_kafka_topic_result_t **rd_kafka_DeleteTopics_result_topics(
        const rd_kafka_DeleteTopics_result_t *result, size_t *cntp);

rd_kafka_resp_err_t rd_kafka_topic_result_error(const rd_kafka_topic_result_t *topicres);
const char *rd_kafka_topic_result_error_string(const rd_kafka_topic_result_t *topicres);
const char *rd_kafka_topic_result_name(const rd_kafka_topic_result_t *topicres);

void rd_kafka_DescribeConsumerGroups(rd_kafka_t *rk, const char **groups, size_t groups_cnt,
                                     const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu);
const rd_kafka_DescribeConsumerGroups_result_t *rd_kafka_event_DescribeConsumerGroups_result(
        rd_kafka_event_t *rkev);
const rd_kafka_ConsumerGroupDescription_t **rd_kafka_DescribeConsumerGroups_result_groups(
        const rd_kafka_DescribeConsumerGroups_result_t *result, size_t *cntp);
const char *rd_kafka_ConsumerGroupDescription_group_id(const rd_kafka_ConsumerGroupDescription_t *grpdesc);
const rd_kafka_error_t *rd_kafka_ConsumerGroupDescription_error(
        const rd_kafka_ConsumerGroupDescription_t *grpdesc);
const rd_kafka_Node_t *rd_kafka_ConsumerGroupDescription_coordinator(
        const rd_kafka_ConsumerGroupDescription_t *grpdesc);
int rd_kafka_Node_id(const rd_kafka_Node_t *node);
const char *rd_kafka_Node_host(const rd_kafka_Node_t *node);
uint16_t rd_kafka_Node_port(const rd_kafka_Node_t *node);
