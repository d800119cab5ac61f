/* The Admin API: pyrdk/rd/admin.py */
typedef struct rd_kafka_NewPartitions_s rd_kafka_NewPartitions_t;
typedef struct rd_kafka_ConfigResource_s rd_kafka_ConfigResource_t;
typedef struct rd_kafka_ConfigEntry_s rd_kafka_ConfigEntry_t;
typedef struct rd_kafka_DeleteRecords_s rd_kafka_DeleteRecords_t;
typedef struct rd_kafka_DeleteGroup_s rd_kafka_DeleteGroup_t;
typedef struct rd_kafka_group_result_s rd_kafka_group_result_t;
typedef struct rd_kafka_ConsumerGroupListing_s rd_kafka_ConsumerGroupListing_t;
typedef struct rd_kafka_MemberDescription_s rd_kafka_MemberDescription_t;
typedef struct rd_kafka_MemberAssignment_s rd_kafka_MemberAssignment_t;
typedef struct rd_kafka_ListConsumerGroupOffsets_s rd_kafka_ListConsumerGroupOffsets_t;
typedef struct rd_kafka_AlterConsumerGroupOffsets_s rd_kafka_AlterConsumerGroupOffsets_t;
typedef rd_kafka_event_t rd_kafka_CreatePartitions_result_t;
typedef rd_kafka_event_t rd_kafka_DescribeConfigs_result_t;
typedef rd_kafka_event_t rd_kafka_DeleteRecords_result_t;
typedef rd_kafka_event_t rd_kafka_DeleteGroups_result_t;
typedef rd_kafka_event_t rd_kafka_ListConsumerGroups_result_t;
typedef rd_kafka_event_t rd_kafka_ListConsumerGroupOffsets_result_t;
typedef rd_kafka_event_t rd_kafka_AlterConsumerGroupOffsets_result_t;
typedef enum rd_kafka_ResourceType_t {
        RD_KAFKA_RESOURCE_UNKNOWN,
        RD_KAFKA_RESOURCE_TOPIC,
        RD_KAFKA_RESOURCE_BROKER,
        ...
} rd_kafka_ResourceType_t;
typedef enum rd_kafka_ConfigSource_t {
        RD_KAFKA_CONFIG_SOURCE_UNKNOWN_CONFIG,
        ...
} rd_kafka_ConfigSource_t;

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

const char *rd_kafka_consumer_group_state_name(rd_kafka_consumer_group_state_t state);
int rd_kafka_ConsumerGroupDescription_is_simple_consumer_group(
        const rd_kafka_ConsumerGroupDescription_t *grpdesc);
const char *rd_kafka_ConsumerGroupDescription_partition_assignor(
        const rd_kafka_ConsumerGroupDescription_t *grpdesc);
rd_kafka_consumer_group_state_t rd_kafka_ConsumerGroupDescription_state(
        const rd_kafka_ConsumerGroupDescription_t *grpdesc);
size_t rd_kafka_ConsumerGroupDescription_member_count(const rd_kafka_ConsumerGroupDescription_t *grpdesc);
const rd_kafka_MemberDescription_t *rd_kafka_ConsumerGroupDescription_member(
        const rd_kafka_ConsumerGroupDescription_t *grpdesc, size_t idx);
const char *rd_kafka_MemberDescription_client_id(const rd_kafka_MemberDescription_t *member);
const char *rd_kafka_MemberDescription_group_instance_id(const rd_kafka_MemberDescription_t *member);
const char *rd_kafka_MemberDescription_consumer_id(const rd_kafka_MemberDescription_t *member);
const char *rd_kafka_MemberDescription_host(const rd_kafka_MemberDescription_t *member);
const rd_kafka_MemberAssignment_t *rd_kafka_MemberDescription_assignment(
        const rd_kafka_MemberDescription_t *member);
const rd_kafka_topic_partition_list_t *rd_kafka_MemberAssignment_partitions(
        const rd_kafka_MemberAssignment_t *assignment);

void rd_kafka_ListConsumerGroups(rd_kafka_t *rk, const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu);
const rd_kafka_ListConsumerGroups_result_t *rd_kafka_event_ListConsumerGroups_result(rd_kafka_event_t *rkev);
const rd_kafka_ConsumerGroupListing_t **rd_kafka_ListConsumerGroups_result_valid(
        const rd_kafka_ListConsumerGroups_result_t *result, size_t *cntp);
const rd_kafka_error_t **rd_kafka_ListConsumerGroups_result_errors(
        const rd_kafka_ListConsumerGroups_result_t *result, size_t *cntp);
const char *rd_kafka_ConsumerGroupListing_group_id(const rd_kafka_ConsumerGroupListing_t *grplist);
int rd_kafka_ConsumerGroupListing_is_simple_consumer_group(const rd_kafka_ConsumerGroupListing_t *grplist);
rd_kafka_consumer_group_state_t rd_kafka_ConsumerGroupListing_state(const rd_kafka_ConsumerGroupListing_t *grplist);

const char *rd_kafka_group_result_name(const rd_kafka_group_result_t *groupres);
const rd_kafka_error_t *rd_kafka_group_result_error(const rd_kafka_group_result_t *groupres);
const rd_kafka_topic_partition_list_t *rd_kafka_group_result_partitions(const rd_kafka_group_result_t *groupres);

rd_kafka_DeleteGroup_t *rd_kafka_DeleteGroup_new(const char *group);
void rd_kafka_DeleteGroup_destroy(rd_kafka_DeleteGroup_t *del_group);
void rd_kafka_DeleteGroups(rd_kafka_t *rk, rd_kafka_DeleteGroup_t **del_groups, size_t del_group_cnt,
                           const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu);
const rd_kafka_DeleteGroups_result_t *rd_kafka_event_DeleteGroups_result(rd_kafka_event_t *rkev);
const rd_kafka_group_result_t **rd_kafka_DeleteGroups_result_groups(
        const rd_kafka_DeleteGroups_result_t *result, size_t *cntp);

rd_kafka_ListConsumerGroupOffsets_t *rd_kafka_ListConsumerGroupOffsets_new(
        const char *group_id, const rd_kafka_topic_partition_list_t *partitions);
void rd_kafka_ListConsumerGroupOffsets_destroy(rd_kafka_ListConsumerGroupOffsets_t *list_grpoffsets);
void rd_kafka_ListConsumerGroupOffsets(rd_kafka_t *rk, rd_kafka_ListConsumerGroupOffsets_t **list_grpoffsets,
        size_t list_grpoffsets_cnt, const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu);
const rd_kafka_ListConsumerGroupOffsets_result_t *rd_kafka_event_ListConsumerGroupOffsets_result(
        rd_kafka_event_t *rkev);
const rd_kafka_group_result_t **rd_kafka_ListConsumerGroupOffsets_result_groups(
        const rd_kafka_ListConsumerGroupOffsets_result_t *result, size_t *cntp);

rd_kafka_AlterConsumerGroupOffsets_t *rd_kafka_AlterConsumerGroupOffsets_new(
        const char *group_id, const rd_kafka_topic_partition_list_t *partitions);
void rd_kafka_AlterConsumerGroupOffsets_destroy(rd_kafka_AlterConsumerGroupOffsets_t *alter_grpoffsets);
void rd_kafka_AlterConsumerGroupOffsets(rd_kafka_t *rk, rd_kafka_AlterConsumerGroupOffsets_t **alter_grpoffsets,
        size_t alter_grpoffsets_cnt, const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu);
const rd_kafka_AlterConsumerGroupOffsets_result_t *rd_kafka_event_AlterConsumerGroupOffsets_result(
        rd_kafka_event_t *rkev);
const rd_kafka_group_result_t **rd_kafka_AlterConsumerGroupOffsets_result_groups(
        const rd_kafka_AlterConsumerGroupOffsets_result_t *result, size_t *cntp);

rd_kafka_DeleteRecords_t *rd_kafka_DeleteRecords_new(const rd_kafka_topic_partition_list_t *before_offsets);
void rd_kafka_DeleteRecords_destroy(rd_kafka_DeleteRecords_t *del_records);
void rd_kafka_DeleteRecords(rd_kafka_t *rk, rd_kafka_DeleteRecords_t **del_records, size_t del_record_cnt,
                            const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu);
const rd_kafka_DeleteRecords_result_t *rd_kafka_event_DeleteRecords_result(rd_kafka_event_t *rkev);
const rd_kafka_topic_partition_list_t *rd_kafka_DeleteRecords_result_offsets(
        const rd_kafka_DeleteRecords_result_t *result);

rd_kafka_NewPartitions_t *rd_kafka_NewPartitions_new(const char *topic, size_t new_total_cnt,
                                                     char *errstr, size_t errstr_size);
void rd_kafka_NewPartitions_destroy(rd_kafka_NewPartitions_t *new_parts);
void rd_kafka_CreatePartitions(rd_kafka_t *rk, rd_kafka_NewPartitions_t **new_parts, size_t new_parts_cnt,
                               const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu);
const rd_kafka_CreatePartitions_result_t *rd_kafka_event_CreatePartitions_result(rd_kafka_event_t *rkev);
const rd_kafka_topic_result_t **rd_kafka_CreatePartitions_result_topics(
        const rd_kafka_CreatePartitions_result_t *result, size_t *cntp);

rd_kafka_ConfigResource_t *rd_kafka_ConfigResource_new(rd_kafka_ResourceType_t restype, const char *resname);
void rd_kafka_ConfigResource_destroy(rd_kafka_ConfigResource_t *config);
const rd_kafka_ConfigEntry_t **rd_kafka_ConfigResource_configs(const rd_kafka_ConfigResource_t *config,
                                                               size_t *cntp);
rd_kafka_ResourceType_t rd_kafka_ConfigResource_type(const rd_kafka_ConfigResource_t *config);
const char *rd_kafka_ConfigResource_name(const rd_kafka_ConfigResource_t *config);
rd_kafka_resp_err_t rd_kafka_ConfigResource_error(const rd_kafka_ConfigResource_t *config);
const char *rd_kafka_ConfigResource_error_string(const rd_kafka_ConfigResource_t *config);
void rd_kafka_DescribeConfigs(rd_kafka_t *rk, rd_kafka_ConfigResource_t **configs, size_t config_cnt,
                              const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu);
const rd_kafka_DescribeConfigs_result_t *rd_kafka_event_DescribeConfigs_result(rd_kafka_event_t *rkev);
const rd_kafka_ConfigResource_t **rd_kafka_DescribeConfigs_result_resources(
        const rd_kafka_DescribeConfigs_result_t *result, size_t *cntp);
const char *rd_kafka_ConfigEntry_name(const rd_kafka_ConfigEntry_t *entry);
const char *rd_kafka_ConfigEntry_value(const rd_kafka_ConfigEntry_t *entry);
rd_kafka_ConfigSource_t rd_kafka_ConfigEntry_source(const rd_kafka_ConfigEntry_t *entry);
int rd_kafka_ConfigEntry_is_read_only(const rd_kafka_ConfigEntry_t *entry);
int rd_kafka_ConfigEntry_is_default(const rd_kafka_ConfigEntry_t *entry);
int rd_kafka_ConfigEntry_is_sensitive(const rd_kafka_ConfigEntry_t *entry);
const char *rd_kafka_ConfigSource_name(rd_kafka_ConfigSource_t confsource);
