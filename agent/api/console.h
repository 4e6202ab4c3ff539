/*
 * console: the operator console page (agent/console.html), embedded at build time by a Makefile rule that turns
 * the file into this array (console_html.c in the build tree). Served by api_console.c; nothing else reads it.
 */
#ifndef NGXAT_CONSOLE_H
#define NGXAT_CONSOLE_H

#include <stddef.h>

/* The page, HTML with one inline <script> and one inline <style>; not NUL-terminated. */
extern const unsigned char console_html[];
/* Its length in bytes. */
extern const size_t console_html_len;

#endif
