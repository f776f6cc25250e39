# fmt: off
# ruff: noqa: E402
# A notebook written for plain PySpark, as getting-started notebooks are (it makes its
# own session with the builder, sets a runtime option, registers a temp view and a UDF,
# and converts to pandas); written for this suite. Each cell starts with a "# %% N" line.

# %% 1
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

spark = SparkSession.builder.appName("sales report").getOrCreate()
spark.conf.set("spark.sql.repl.eagerEval.enabled", True)

# %% 2
from datetime import date

sales = spark.createDataFrame(
    [
        ("north", "tea", 12, date(2026, 1, 5)),
        ("south", "tea", 4, date(2026, 1, 6)),
        ("north", "coffee", 30, date(2026, 1, 6)),
        ("east", "coffee", 7, date(2026, 1, 7)),
        ("south", "cocoa", 15, date(2026, 1, 8)),
    ],
    "region string, product string, amount long, day date",
)

# %% 3
sales.groupBy("region").agg(F.sum("amount").alias("total")).orderBy("region").show()

# %% 4
sales.createOrReplaceTempView("sales")
spark.sql("SELECT count(*) AS big FROM sales WHERE amount > 10").show()

# %% 5
@F.udf("long")
def doubled(amount):
    return amount * 2

sales.select("product", doubled("amount").alias("twice")).orderBy("twice").show()

# %% 6
frame = sales.filter(sales.amount >= 7).toPandas()
print(len(frame), sorted(frame["product"]))
