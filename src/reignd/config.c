/*
 * config.c - reads reign.conf (config.h).  Placeholder: the parser lands
 * in the next commit.
 */
#include <string.h>

#include "config.h"

int reignd_config_load(const char *path, reignd_config **ret, char *err, size_t errlen)
{
    *ret = NULL;
    if (errlen)
        err[0] = '\0';
    return REIGN_EINVAL;
}

reignd_config *reignd_config_free(reignd_config *config)
{
    return NULL;
}
