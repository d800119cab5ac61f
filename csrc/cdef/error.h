/* Error codes and rd_kafka_error_t: pyrdk/rd/errors.py */
const char *rd_kafka_err2str(rd_kafka_resp_err_t err);
const char *rd_kafka_err2name(rd_kafka_resp_err_t err);
void rd_kafka_get_err_descs(const struct rd_kafka_err_desc **errdescs, size_t *cntp);
rd_kafka_resp_err_t rd_kafka_error_code(const rd_kafka_error_t *error);
const char *rd_kafka_error_string(const rd_kafka_error_t *error);
int rd_kafka_error_is_fatal(const rd_kafka_error_t *error);
int rd_kafka_error_is_retriable(const rd_kafka_error_t *error);
int rd_kafka_error_txn_requires_abort(const rd_kafka_error_t *error);
void rd_kafka_error_destroy(rd_kafka_error_t *error);
