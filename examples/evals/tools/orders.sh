#!/bin/sh
# The order desk's tools, as commands: the model's JSON arguments arrive on
# stdin and the result is what is printed. One script serves the three
# tools by the name it is run under (its first argument).
set -eu
args=$(cat)
order=$(printf '%s' "$args" | sed -n 's/.*"order" *: *"\{0,1\}\([0-9A-Za-z-]*\).*/\1/p')
case "${1:-}" in
  lookup) echo "order $order: two card payments of 59 EUR on 2026-11-19, shipped" ;;
  refund) echo "refund of 59 EUR issued for order $order" ;;
  cancel) echo "order $order cancelled" ;;
  *) echo "unknown tool ${1:-}" >&2; exit 1 ;;
esac
