/*
 * error.c - names and sentences for the error codes of common.h, from the
 * one table REIGN_ERRNO_MAP.
 */
#include <string.h>

#include "core.h"

const char *reign_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define XX(name, value, msg)                                                                       \
    case value:                                                                                    \
        return msg;
        REIGN_ERRNO_MAP(XX)
#undef XX
    default:
        return err < 0 && err > -1000 ? strerror(-err) : "unknown error";
    }
}

const char *reign_err_name(int err)
{
    switch (err) {
    case 0:
        return "0";
#define XX(name, value, msg)                                                                       \
    case value:                                                                                    \
        return "REIGN_" #name;
        REIGN_ERRNO_MAP(XX)
#undef XX
    default:
        return "REIGN_EUNKNOWN";
    }
}

const char *reign_version(void)
{
    return REIGN_VERSION_STRING;
}
