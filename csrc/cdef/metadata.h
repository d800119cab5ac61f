/* rd_kafka_metadata(): pyrdk/rd/handle.py */
typedef struct rd_kafka_metadata_broker {
        int32_t id;
        char *host;
        int port;
} rd_kafka_metadata_broker_t;

typedef struct rd_kafka_metadata_partition {
        int32_t id;
        rd_kafka_resp_err_t err;
        int32_t leader;
        int replica_cnt;
        int32_t *replicas;
        int isr_cnt;
        int32_t *isrs;
} rd_kafka_metadata_partition_t;

typedef struct rd_kafka_metadata_topic {
        char *topic;
        int partition_cnt;
        struct rd_kafka_metadata_partition *partitions;
        rd_kafka_resp_err_t err;
} rd_kafka_metadata_topic_t;

typedef struct rd_kafka_metadata {
        int broker_cnt;
        struct rd_kafka_metadata_broker *brokers;
        int topic_cnt;
        struct rd_kafka_metadata_topic *topics;
        int32_t orig_broker_id;
        char *orig_broker_name;
} rd_kafka_metadata_t;

rd_kafka_resp_err_t rd_kafka_metadata(rd_kafka_t *rk, int all_topics, rd_kafka_topic_t *only_rkt,
                                      const struct rd_kafka_metadata **metadatap, int timeout_ms);
void rd_kafka_metadata_destroy(const struct rd_kafka_metadata *metadata);

struct rd_kafka_group_member_info {
        char *member_id;
        char *client_id;
        char *client_host;
        void *member_metadata;
        int member_metadata_size;
        void *member_assignment;
        int member_assignment_size;
};

struct rd_kafka_group_info {
        struct rd_kafka_metadata_broker broker;
        char *group;
        rd_kafka_resp_err_t err;
        char *state;
        char *protocol_type;
        char *protocol;
        struct rd_kafka_group_member_info *members;
        int member_cnt;
};

struct rd_kafka_group_list {
        struct rd_kafka_group_info *groups;
        int group_cnt;
};

rd_kafka_resp_err_t rd_kafka_list_groups(rd_kafka_t *rk, const char *group,
                                         const struct rd_kafka_group_list **grplistp, int timeout_ms);
void rd_kafka_group_list_destroy(const struct rd_kafka_group_list *grplist);
