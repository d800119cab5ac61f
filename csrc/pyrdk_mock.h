/* Mock cluster calls newer than the rdkafka_mock.h pyrdk may be built against: pyrdk_mock.c. */
#ifndef PYRDK_MOCK_H
#define PYRDK_MOCK_H

#include <stdint.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

/* rd_kafka_mock_topic_delete() (librdkafka 2.15.0). */
rd_kafka_resp_err_t pyrdk_mock_topic_delete(rd_kafka_mock_cluster_t *mcluster, const char *topic);
/* rd_kafka_mock_broker_decommission() (librdkafka 2.10.0). */
rd_kafka_resp_err_t pyrdk_mock_broker_decommission(rd_kafka_mock_cluster_t *mcluster, int32_t broker_id);
/* rd_kafka_mock_partition_push_request_errors() (librdkafka 2.15.0), one error at a time. */
rd_kafka_resp_err_t pyrdk_mock_partition_push_request_error(rd_kafka_mock_cluster_t *mcluster, const char *topic,
                                                            int32_t partition, int16_t api_key,
                                                            rd_kafka_resp_err_t err);

#endif
