/*
 * crash: for the system tests, NGXAT_TEST_CRASH=WHERE kills the agent at the point WHERE ("journaled": between a
 * journal row and its write; "backed-up": an nginx change's backups and state written, its files not yet), as a
 * power cut or kill -9 would, so that recovery at the next start can be checked for real.
 */
#ifndef NGXAT_CRASH_H
#define NGXAT_CRASH_H

void crash_point(const char *where);

#endif
