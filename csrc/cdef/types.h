/* Opaque types, enums and public structs of rdkafka.h, read first by build_ffi.py.
 * Names are rdkafka.h's, verbatim; "..." lets the C compiler fill in values. */

typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_conf_s rd_kafka_conf_t;
typedef struct rd_kafka_topic_conf_s rd_kafka_topic_conf_t;
typedef struct rd_kafka_queue_s rd_kafka_queue_t;
typedef struct rd_kafka_op_s rd_kafka_event_t;
typedef struct rd_kafka_headers_s rd_kafka_headers_t;
typedef struct rd_kafka_error_s rd_kafka_error_t;
typedef struct rd_kafka_mock_cluster_s rd_kafka_mock_cluster_t;
typedef struct rd_kafka_NewTopic_s rd_kafka_NewTopic_t;
typedef struct rd_kafka_DeleteTopic_s rd_kafka_DeleteTopic_t;
typedef struct rd_kafka_AdminOptions_s rd_kafka_AdminOptions_t;
typedef struct rd_kafka_topic_result_s rd_kafka_topic_result_t;
typedef struct rd_kafka_ConsumerGroupDescription_s rd_kafka_ConsumerGroupDescription_t;
typedef struct rd_kafka_Node_s rd_kafka_Node_t;
typedef rd_kafka_event_t rd_kafka_CreateTopics_result_t;
typedef rd_kafka_event_t rd_kafka_DeleteTopics_result_t;
typedef rd_kafka_event_t rd_kafka_DescribeConsumerGroups_result_t;

typedef enum rd_kafka_type_t { RD_KAFKA_PRODUCER, RD_KAFKA_CONSUMER } rd_kafka_type_t;

typedef enum {
        RD_KAFKA_TIMESTAMP_NOT_AVAILABLE,
        RD_KAFKA_TIMESTAMP_CREATE_TIME,
        RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME
} rd_kafka_timestamp_type_t;

typedef enum {
        RD_KAFKA_RESP_ERR__BEGIN,
        RD_KAFKA_RESP_ERR__PARTITION_EOF,
        RD_KAFKA_RESP_ERR__TIMED_OUT,
        RD_KAFKA_RESP_ERR__TRANSPORT,
        RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN,
        RD_KAFKA_RESP_ERR__QUEUE_FULL,
        RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
        RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC,
        RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION,
        RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS,
        RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS,
        RD_KAFKA_RESP_ERR__NO_OFFSET,
        RD_KAFKA_RESP_ERR__PURGE_QUEUE,
        RD_KAFKA_RESP_ERR__PURGE_INFLIGHT,
        RD_KAFKA_RESP_ERR__FATAL,
        RD_KAFKA_RESP_ERR__SSL,
        RD_KAFKA_RESP_ERR__AUTHENTICATION,
        RD_KAFKA_RESP_ERR__END,
        RD_KAFKA_RESP_ERR_NO_ERROR,
        RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE,
        ...
} rd_kafka_resp_err_t;

struct rd_kafka_err_desc {
        rd_kafka_resp_err_t code;
        const char *name;
        const char *desc;
};

typedef struct rd_kafka_message_s {
        rd_kafka_resp_err_t err;
        rd_kafka_topic_t *rkt;
        int32_t partition;
        void *payload;
        size_t len;
        void *key;
        size_t key_len;
        int64_t offset;
        void *_private;
} rd_kafka_message_t;

typedef struct rd_kafka_topic_partition_s {
        char *topic;
        int32_t partition;
        int64_t offset;
        void *metadata;
        size_t metadata_size;
        void *opaque;
        rd_kafka_resp_err_t err;
        void *_private;
} rd_kafka_topic_partition_t;

typedef struct rd_kafka_topic_partition_list_s {
        int cnt;
        int size;
        rd_kafka_topic_partition_t *elems;
} rd_kafka_topic_partition_list_t;

typedef enum {
        RD_KAFKA_CONF_UNKNOWN,
        RD_KAFKA_CONF_INVALID,
        RD_KAFKA_CONF_OK
} rd_kafka_conf_res_t;

typedef enum {
        RD_KAFKA_ADMIN_OP_ANY,
        RD_KAFKA_ADMIN_OP_CREATETOPICS,
        RD_KAFKA_ADMIN_OP_DELETETOPICS,
        RD_KAFKA_ADMIN_OP_CREATEPARTITIONS,
        RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS,
        RD_KAFKA_ADMIN_OP_DELETERECORDS,
        RD_KAFKA_ADMIN_OP_DELETEGROUPS,
        RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS,
        RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS,
        RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS,
        RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS,
        ...
} rd_kafka_admin_op_t;

typedef enum rd_kafka_consumer_group_state_t {
        RD_KAFKA_CONSUMER_GROUP_STATE_UNKNOWN,
        ...
} rd_kafka_consumer_group_state_t;

#define RD_KAFKA_PARTITION_UA ...
#define RD_KAFKA_OFFSET_BEGINNING ...
#define RD_KAFKA_OFFSET_END ...
#define RD_KAFKA_OFFSET_STORED ...
#define RD_KAFKA_OFFSET_INVALID ...
#define RD_KAFKA_MSG_F_COPY ...
#define RD_KAFKA_MSG_F_BLOCK ...
#define RD_KAFKA_PURGE_F_QUEUE ...
#define RD_KAFKA_PURGE_F_INFLIGHT ...
#define RD_KAFKA_EVENT_NONE ...
#define RD_KAFKA_EVENT_ERROR ...
#define RD_KAFKA_EVENT_CREATETOPICS_RESULT ...
#define RD_KAFKA_EVENT_DELETETOPICS_RESULT ...
#define RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT ...
#define RD_KAFKA_VERSION ...
