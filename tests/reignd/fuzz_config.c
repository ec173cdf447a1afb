/*
 * fuzz_config.c - libFuzzer target for reign.conf parsing
 * (src/reignd/config.c).  Replayed under ctest over corpus/config/ by
 * tests/fuzz/replay.c (tests/reignd/tests.cmake).
 *
 * Beyond "no crash, no leak", it checks that:
 *   - a failure is REIGN_EINVAL, REIGND_ENOFENCE or REIGN_ENOMEM, leaves
 *     no configuration, and gives one line "fuzz.conf:LINE: ..." or
 *     "fuzz.conf: ..." without control characters; REIGND_ENOFENCE always
 *     says "no fence method";
 *   - a success holds only checked values: at least one service, every
 *     required string set, durations within (0, 24h], counts within
 *     1..1000, check_timeout <= check_interval, at least one fence method
 *     (a command for shell ones, none for graceful), the derived timing
 *     consistent, and no password inside the election URI;
 *   - every accepted election URI is a store URI with its line (what the
 *     library makes of it, reign_uri_check(), is fuzzed by fuzz_uri.c);
 *   - parsing is deterministic (the same input gives the same answer).
 */
#include <stdbool.h>
#include <string.h>

#include "config.h"
#include "fuzz_common.h"

#define DAY_MS (24 * 3600 * 1000LL)

static bool one_clean_line(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

static bool duration_ok(int64_t ms)
{
    return ms > 0 && ms <= DAY_MS;
}

static void check_service(const reignd_service_config *s)
{
    CHECK(s->name && s->name[0] && s->line > 0);
    CHECK(s->election_uri && strstr(s->election_uri, "://"));
    const char *auth = strstr(s->election_uri, "://") + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', alen);
    while (at && memchr(at + 1, '@', alen - (size_t)(at + 1 - auth)))
        at = memchr(at + 1, '@', alen - (size_t)(at + 1 - auth));
    CHECK(!at || !memchr(auth, ':', (size_t)(at - auth)));
    CHECK(s->election_name && s->node_id && s->service_address && s->check_target);
    CHECK(s->become_active.command && s->become_standby.command);
    CHECK(one_clean_line(s->election_uri));
    CHECK(duration_ok(s->session_timeout_ms) && duration_ok(s->check_interval_ms));
    CHECK(duration_ok(s->check_timeout_ms) && s->check_timeout_ms <= s->check_interval_ms);
    CHECK(duration_ok(s->become_active.timeout_ms) && duration_ok(s->become_standby.timeout_ms));
    CHECK(duration_ok(s->notify.timeout_ms));
    CHECK(s->check_rise >= 1 && s->check_rise <= 1000);
    CHECK(s->check_fall >= 1 && s->check_fall <= 1000);
    CHECK(s->n_fence >= 1);
    int64_t fence_ms = 0;
    for (size_t i = 0; i < s->n_fence; i++) {
        const reignd_fence_method *f = &s->fence[i];
        CHECK(duration_ok(f->timeout_ms));
        CHECK(f->line > s->line);
        if (f->kind == REIGND_FENCE_SHELL)
            CHECK(f->command && f->command[0] && f->command[0] != ' ');
        else
            CHECK(f->kind == REIGND_FENCE_GRACEFUL && !f->command);
        fence_ms += f->timeout_ms;
    }
    CHECK(s->timing.fence_ms == fence_ms);
    CHECK(s->timing.detection_ms == s->check_interval_ms * s->check_fall + s->check_timeout_ms);
    CHECK(s->timing.takeover_on_crash_ms ==
          s->session_timeout_ms + fence_ms + s->become_active.timeout_ms);
    char host[256];
    int port;
    CHECK(reignd_parse_hostport(s->service_address, host, sizeof(host), &port) == 0);
    CHECK(!s->peer_address ||
          reignd_parse_hostport(s->peer_address, host, sizeof(host), &port) == 0);
    char text[1024];
    CHECK(reignd_config_timing_text(s, text, sizeof(text)) < sizeof(text));

    CHECK(strstr(s->election_uri, "://") && s->election_uri_line > s->line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reignd_config *cfg = (reignd_config *)&cfg;
    char err[512];
    int rc = reignd_config_parse((const char *)data, size, "fuzz.conf", &cfg, err, sizeof(err));
    if (rc != 0) {
        CHECK(rc == REIGN_EINVAL || rc == REIGND_ENOFENCE || rc == REIGN_ENOMEM);
        CHECK(cfg == NULL);
        CHECK(strncmp(err, "fuzz.conf:", 10) == 0 && one_clean_line(err));
        CHECK(rc != REIGND_ENOFENCE || strstr(err, "no fence method"));
    } else {
        CHECK(cfg && cfg->n_services >= 1 && cfg->control_socket);
        CHECK(cfg->control_socket[0] == '/');
        for (size_t i = 0; i < cfg->n_services; i++) {
            check_service(&cfg->services[i]);
            CHECK(reignd_config_service(cfg, cfg->services[i].name) == &cfg->services[i]);
        }
        CHECK(!cfg->peer_listen || cfg->peer_secret_file);
    }
    reignd_config *again = NULL;
    char err2[512];
    int rc2 =
        reignd_config_parse((const char *)data, size, "fuzz.conf", &again, err2, sizeof(err2));
    CHECK(rc2 == rc && (rc != 0 || again->n_services == cfg->n_services));
    CHECK(rc == 0 || strcmp(err, err2) == 0);
    reignd_config_free(again);
    reignd_config_free(cfg == (reignd_config *)&cfg ? NULL : cfg);
    return 0;
}
