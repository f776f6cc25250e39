"""Spark backends: how sessions are made, tagged, cancelled and released.

``classic`` drives one SparkContext in the kernel's JVM through py4j. Spark Connect
arrives as ``connect`` beside it.
"""
