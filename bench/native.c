/* The physical limit: librdkafka driven from C, with no language binding in between.
 *
 *   native produce BROKERS TOPIC COUNT SIZE [name=value ...]
 *   native consume BROKERS TOPIC COUNT SIZE [name=value ...]
 *
 * produce: COUNT messages of SIZE bytes through rd_kafka_producev (copied, as every
 * Python client copies), librdkafka's partitioner, then rd_kafka_flush; the clock runs
 * from the first produce call to the end of the flush.
 * consume: assign every partition of TOPIC at offset 0 (a fresh topic's first; a logical
 * OFFSET_BEGINNING is looked up first, and the first fetch then waits fetch.wait.max.ms) and
 * read COUNT messages with rd_kafka_consume_batch_queue, touching every byte of every value;
 * the clock runs from the first call for messages, just after the assignment, to the last
 * message.
 * Prints one JSON object: {"count": N, "bytes": B, "seconds": S, "cpu_seconds": C}, C the
 * process's CPU time (all its threads: CLOCK_PROCESS_CPUTIME_ID) over the same section. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *why) {
        fprintf(stderr, "native: %s: %s\n", what, why);
        exit(1);
}

static rd_kafka_conf_t *make_conf(const char *brokers, int argc, char **argv) {
        char err[512];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof(err)))
                die("bootstrap.servers", err);
        for (int i = 0; i < argc; i++) {
                char *eq = strchr(argv[i], '=');
                if (!eq)
                        die(argv[i], "expected name=value");
                *eq = '\0';
                if (rd_kafka_conf_set(conf, argv[i], eq + 1, err, sizeof(err)))
                        die(argv[i], err);
        }
        return conf;
}

static long delivered, failed;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        (void)rk;
        (void)opaque;
        if (m->err)
                failed++;
        else
                delivered++;
}

static int produce(rd_kafka_conf_t *conf, const char *topic, long count, size_t size) {
        char err[512];
        char *value = malloc(size);
        memset(value, 'x', size);
        rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
        if (!rk)
                die("rd_kafka_new", err);
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        const struct rd_kafka_metadata *md;
        if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR)
                rd_kafka_metadata_destroy(md);
        double start = now(), cpu_start = cpu_now();
        for (long i = 0; i < count; i++) {
                rd_kafka_resp_err_t e;
                while ((e = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt),
                                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                              RD_KAFKA_V_VALUE(value, size), RD_KAFKA_V_END)) ==
                       RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        rd_kafka_poll(rk, 10);
                if (e)
                        die("produce", rd_kafka_err2str(e));
                rd_kafka_poll(rk, 0);
        }
        rd_kafka_flush(rk, 60000);
        double secs = now() - start, cpu = cpu_now() - cpu_start;
        if (failed || delivered != count) {
                fprintf(stderr, "native: %ld delivered, %ld failed of %ld\n", delivered, failed, count);
                return 1;
        }
        printf("{\"count\": %ld, \"bytes\": %ld, \"seconds\": %.6f, \"cpu_seconds\": %.6f}\n", count,
               (long)(count * size), secs, cpu);
        rd_kafka_topic_destroy(rkt);
        rd_kafka_destroy(rk);
        free(value);
        return 0;
}

static int consume(rd_kafka_conf_t *conf, const char *topic, long count) {
        char err[512];
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err));
        rd_kafka_conf_set(conf, "enable.partition.eof", "false", err, sizeof(err));
        rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", err, sizeof(err));
        if (rd_kafka_conf_set(conf, "group.id", "pyrdk-bench-native", err, sizeof(err)))
                die("group.id", err);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
        if (!rk)
                die("rd_kafka_new", err);
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        const struct rd_kafka_metadata *md;
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
        if (e)
                die("metadata", rd_kafka_err2str(e));
        rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(8);
        for (int i = 0; i < md->topics[0].partition_cnt; i++)
                rd_kafka_topic_partition_list_add(parts, topic, md->topics[0].partitions[i].id)->offset = 0;
        rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
        if ((e = rd_kafka_assign(rk, parts)))
                die("assign", rd_kafka_err2str(e));
        rd_kafka_topic_partition_list_destroy(parts);
        rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
        rd_kafka_message_t *batch[1000];
        long got = 0, bytes = 0;
        unsigned sum = 0;
        double deadline = now() + 120;
        double start = now(), cpu_start = cpu_now();
        while (got < count && now() < deadline) {
                ssize_t n = rd_kafka_consume_batch_queue(q, 100, batch, 1000);
                for (ssize_t i = 0; i < n; i++) {
                        rd_kafka_message_t *m = batch[i];
                        if (!m->err) {
                                got++;
                                const unsigned char *p = m->payload;
                                for (size_t j = 0; j < m->len; j++)
                                        sum += p[j];
                                bytes += m->len;
                        }
                        rd_kafka_message_destroy(m);
                }
        }
        double secs = now() - start, cpu = cpu_now() - cpu_start;
        if (got < count) {
                fprintf(stderr, "native: consumed %ld of %ld\n", got, count);
                return 1;
        }
        printf("{\"count\": %ld, \"bytes\": %ld, \"seconds\": %.6f, \"cpu_seconds\": %.6f, \"checksum\": %u}\n",
               got, bytes, secs, cpu, sum);
        rd_kafka_queue_destroy(q);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return 0;
}

int main(int argc, char **argv) {
        if (argc < 6) {
                fprintf(stderr, "usage: native produce|consume BROKERS TOPIC COUNT SIZE [name=value ...]\n");
                return 2;
        }
        rd_kafka_conf_t *conf = make_conf(argv[2], argc - 6, argv + 6);
        long count = atol(argv[4]);
        size_t size = (size_t)atol(argv[5]);
        if (!strcmp(argv[1], "produce"))
                return produce(conf, argv[3], count, size);
        if (!strcmp(argv[1], "consume"))
                return consume(conf, argv[3], count);
        fprintf(stderr, "native: unknown mode %s\n", argv[1]);
        return 2;
}
