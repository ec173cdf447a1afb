/*
 * fuzz_control.c - libFuzzer target for the control socket's request
 * parser (reignd_request_parse, src/reignd/control.c), which reads whatever
 * a local client sends.  Replayed under ctest over corpus/control/ by
 * tests/fuzz/replay.c (tests/reignd/tests.cmake).
 *
 * Beyond "no crash, no leak", it checks that:
 *   - a failure is REIGN_EINVAL, REIGN_E2BIG or REIGN_ENOMEM with a
 *     one-line reason and nothing left in the request;
 *   - a success has a known op and exactly the members that op takes:
 *     a service (1..REIGN_NAME_MAX bytes, no control characters) for all but
 *     status, a node and "wait" for failover only, a delay in [0, a day] for
 *     cede only;
 *   - the answer line built for the outcome is one line of JSON;
 *   - parsing is deterministic.
 */
#include <math.h>
#include <string.h>

#include "call.h"
#include "control.h"
#include "fuzz_common.h"

static int clean_name(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > max)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 0;
    return 1;
}

static void check_answer(int r, const char *err)
{
    size_t len;
    char *line = reignd__answer_line(r, err, NULL, &len);
    if (!line)
        return; /* out of memory */
    CHECK(len > 0 && line[len - 1] == '\n' && memchr(line, '\n', len) == line + len - 1);
    cJSON *back = cJSON_ParseWithLength(line, len);
    CHECK(back != NULL);
    CHECK(cJSON_IsBool(cJSON_GetObjectItem(back, "ok")));
    cJSON_Delete(back);
    free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reignd_request req, again;
    char err[256] = "", err2[256] = "";
    int r = reignd_request_parse((const char *)data, size, &req, err, sizeof(err));
    int r2 = reignd_request_parse((const char *)data, size, &again, err2, sizeof(err2));
    CHECK(r == r2);
    if (r < 0) {
        CHECK(r == REIGN_EINVAL || r == REIGN_E2BIG || r == REIGN_ENOMEM);
        CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
        CHECK(strcmp(err, err2) == 0 || r == REIGN_ENOMEM);
        CHECK(req.service == NULL && req.to == NULL);
        check_answer(r, err);
        return 0;
    }
    CHECK(req.op == again.op);
    CHECK(strcmp(reignd_op_name(req.op), "?") != 0);
    if (req.op == REIGND_OP_STATUS)
        CHECK(req.service == NULL);
    else
        CHECK(clean_name(req.service, REIGN_NAME_MAX) && strcmp(req.service, again.service) == 0);
    if (req.op == REIGND_OP_FAILOVER)
        CHECK(clean_name(req.to, REIGN_ID_MAX));
    else
        CHECK(req.to == NULL);
    CHECK(isfinite(req.delay_s) && req.delay_s >= 0 && req.delay_s <= REIGND_CEDE_DELAY_MAX_S);
    if (req.op != REIGND_OP_CEDE)
        CHECK(req.delay_s == 0);
    CHECK(req.no_wait == again.no_wait && (req.no_wait == 0 || req.op == REIGND_OP_FAILOVER));
    check_answer(0, NULL);
    reignd_request_clear(&req);
    reignd_request_clear(&again);
    return 0;
}
