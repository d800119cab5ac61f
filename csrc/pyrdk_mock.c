/* The mock cluster's topic deletion, broker decommission and partition errors came after the rdkafka_mock.h
 * that pyrdk may be built against (Debian bookworm ships 2.0.2), while the library pyrdk runs
 * is newer. These wrappers look them up in the running library (dlsym), as pyrdk_admin.c does
 * for IncrementalAlterConfigs, and answer RD_KAFKA_RESP_ERR__NOT_IMPLEMENTED where it has
 * none. They are test aids, rare enough that nothing is kept between calls. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>

#include "pyrdk_mock.h"

typedef rd_kafka_resp_err_t (*topic_fn)(rd_kafka_mock_cluster_t *, const char *);
typedef rd_kafka_resp_err_t (*broker_fn)(rd_kafka_mock_cluster_t *, int32_t);
typedef rd_kafka_resp_err_t (*partition_errors_fn)(rd_kafka_mock_cluster_t *, const char *, int32_t, int16_t,
                                                   size_t, ...);

rd_kafka_resp_err_t pyrdk_mock_topic_delete(rd_kafka_mock_cluster_t *mcluster, const char *topic) {
        topic_fn fn = (topic_fn)dlsym(RTLD_DEFAULT, "rd_kafka_mock_topic_delete");

        return fn ? fn(mcluster, topic) : RD_KAFKA_RESP_ERR__NOT_IMPLEMENTED;
}

rd_kafka_resp_err_t pyrdk_mock_broker_decommission(rd_kafka_mock_cluster_t *mcluster, int32_t broker_id) {
        broker_fn fn = (broker_fn)dlsym(RTLD_DEFAULT, "rd_kafka_mock_broker_decommission");

        return fn ? fn(mcluster, broker_id) : RD_KAFKA_RESP_ERR__NOT_IMPLEMENTED;
}

rd_kafka_resp_err_t pyrdk_mock_partition_push_request_error(rd_kafka_mock_cluster_t *mcluster, const char *topic,
                                                            int32_t partition, int16_t api_key,
                                                            rd_kafka_resp_err_t err) {
        partition_errors_fn fn =
            (partition_errors_fn)dlsym(RTLD_DEFAULT, "rd_kafka_mock_partition_push_request_errors");

        return fn ? fn(mcluster, topic, partition, api_key, (size_t)1, err) : RD_KAFKA_RESP_ERR__NOT_IMPLEMENTED;
}
