/*
 * ctl.h - `reign ctl` (ctl.c): control a running reignd over its local
 * socket.  Its own header so that cli.h stays about the store-facing
 * subcommands.
 */
#ifndef REIGN_CLI_CTL_H
#define REIGN_CLI_CTL_H

#include "cli.h"

cli_main_fn cli_ctl_main;

#endif
