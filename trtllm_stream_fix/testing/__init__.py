# SPDX-License-Identifier: Apache-2.0
"""Test support only (the package never imports it): the event dump, fuzzers, driver
messages, stream helpers, a Redis server for the store tests and the docs' module tables."""
