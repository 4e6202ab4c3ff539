#!/bin/bash
# Worker connections run out, set where operators set them: worker_connections 128 in nginx.conf's events block,
# 1000 kept-alive clients. scenario-worker-connections.sh with WC_IN=nginx.conf: the agent proposes the cause (not
# tcp_fin_timeout or listen_queue), edits the operator's line in place, keeps it on the error log's rate, and
# ngxctl revert puts nginx.conf back byte for byte. (The events.conf variant, WC_IN=events.conf, the agent's own
# include file, runs by hand: the same code path at 88 s more of CI, and operators set it in nginx.conf.)
WC_IN=nginx.conf exec "$(dirname "$0")/scenario-worker-connections.sh"
