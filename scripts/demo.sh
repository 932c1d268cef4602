#!/usr/bin/env bash
# Placeholder until pensa's walkthrough lands.
echo "demo: not yet"
