"""Demo lessons written for `lore demo` (fictional project "acme-shop", a Django + React web shop)."""  # noqa: E501

from __future__ import annotations

LESSONS: list[dict] = [
    # -------------------- auth and sessions
    {
        "key": "file-sessions",
        "title": "Store user sessions as local files, not in Redis",
        "content": (
            "Django remembers which customer is signed in, and their cart, from one HTTP call to "
            "the next through the session; acme-shop runs on a single app server, so sessions are "
            'files on its disk: SESSION_ENGINE = "django.contrib.sessions.backends.file" with '
            'SESSION_FILE_PATH = "/var/lib/acme-shop/sessions" (owned by www-data, mode 0700). Do '
            "not add Redis or django-redis just for sessions: it is one more daemon to run, "
            "monitor, patch and back up, for no measurable gain at our peak of about 40 req/s. "
            "Revisit only if the shop ever runs more than one app server."
        ),
        "kind": "preference",
        "confidence": "high",
        "source": "correction",
        "tags": ["django", "auth", "sessions"],
        "summary": "Sessions are files on the app server's disk; no Redis.",
        "when_to_apply": "Choosing or changing SESSION_ENGINE while acme-shop has one app server.",
        "when_not_to_apply": (
            "Once there are two or more app servers: files are not shared between them, so switch "
            "to the cached_db backend instead."
        ),
        "contexts": ["local development", "production deploy"],
        "file_types": ["py"],
        "preference": {
            "context": "Picking a Django session backend for acme-shop",
            "rejected": "Redis-backed sessions through django-redis and the cache session engine",
            "preferred": "django.contrib.sessions.backends.file on the app server's local disk",
            "reasoning": (
                "One server, so nothing needs sharing; no extra daemon to operate or secure; "
                "sessions survive a gunicorn restart."
            ),
        },
        "trade_offs": [
            {
                "type": "pro",
                "description": "No Redis service to deploy, monitor, back up or firewall.",
            },
            {"type": "pro", "description": "Sessions survive app restarts and deploys."},
            {
                "type": "con",
                "description": "Not shared across machines; blocks horizontal scaling as-is.",
            },
            {
                "type": "con",
                "description": "Expired files are never removed unless clearsessions runs.",
            },
        ],
        "evidence": [
            {
                "quote": (
                    "no, don't use Redis for sessions, we only have one box. just use local file "
                    "sessions"
                ),
                "session_id": "demo-session-1",
            },
        ],
    },
    {
        "key": "redis-sessions-old",
        "title": "Store Django sessions in Redis via django-redis",
        "content": (
            'Early plan from v0.3: SESSION_ENGINE = "django.contrib.sessions.backends.cache" with '
            'CACHES["default"] pointing at redis://127.0.0.1:6379/1 through django-redis. It was '
            "chosen on the assumption that Redis would be faster than database sessions, but it "
            "was never benchmarked. Replaced once we confirmed the shop runs on a single server."
        ),
        "kind": "decision",
        "confidence": "low",
        "source": "inferred",
        "tags": ["django", "auth", "sessions"],
        "source_notes": "Kept for history; superseded by the file-based sessions preference.",
    },
    {
        "key": "session-cleanup",
        "title": "Expired file sessions exhausted disk inodes; run clearsessions nightly",
        "content": (
            "Django never deletes expired file sessions by itself. After four months "
            "/var/lib/acme-shop/sessions held 2.1 million files, the filesystem exhausted its "
            "inodes and every write failed with `OSError: [Errno 28] No space left on device` "
            "although `df -h` showed 60% free. Fix: a systemd timer runs `python manage.py "
            "clearsessions` every night at 03:15, and `df -i` is now on the monitoring dashboard "
            "with an alert at 80%."
        ),
        "kind": "bug_fix",
        "confidence": "high",
        "source": "observed",
        "tags": ["django", "deploy", "sessions"],
        "problem_solved": (
            "Intermittent 500s on every form submit because no file could be created."
        ),
        "contexts": ["production deploy"],
    },
    {
        "key": "session-cookie-flags",
        "title": "Production session and CSRF cookies must be Secure, HttpOnly, SameSite=Lax",
        "content": (
            "In production settings: SESSION_COOKIE_SECURE = True, CSRF_COOKIE_SECURE = True, "
            'SESSION_COOKIE_HTTPONLY = True, SESSION_COOKIE_SAMESITE = "Lax" and '
            "SECURE_HSTS_SECONDS = 31536000 behind nginx with SECURE_PROXY_SSL_HEADER set. "
            "CSRF_COOKIE_HTTPONLY stays False because the React client must read the csrftoken "
            "cookie. `python manage.py check --deploy` must report no warnings before a release."
        ),
        "kind": "project_rule",
        "confidence": "very-high",
        "source": "documented",
        "tags": ["django", "security", "auth"],
        "when_not_to_apply": (
            "Local development over plain http://localhost:8000; the Secure flags follow the DEBUG "
            "environment variable there."
        ),
        "contexts": ["production deploy"],
        "anti_contexts": ["local development"],
        "file_types": ["py"],
    },
    {
        "key": "csrf-react-fetch",
        "title": "React POST calls got 403 until the X-CSRFToken header was sent",
        "content": (
            "Every fetch() POST from the React cart to /api/cart/items/ returned 403 with "
            "`{\"detail\": \"CSRF Failed: CSRF token missing or incorrect.\"}` because DRF's "
            "SessionAuthentication enforces CSRF for cookie-authenticated calls. Fix: read the "
            "`csrftoken` cookie and send it as the `X-CSRFToken` header, with credentials: "
            '"same-origin". Never silence it with @csrf_exempt on the API endpoints.'
        ),
        "kind": "bug_fix",
        "confidence": "high",
        "source": "tested",
        "tags": ["react", "django", "auth", "security"],
        "file_types": ["ts", "tsx"],
        "examples": [
            {
                "language": "typescript",
                "code": (
                    "function getCookie(name: string): string | undefined {\n"
                    "  return document.cookie.split('; ')\n"
                    "    .find((c) => c.startsWith(name + '='))?.split('=')[1];\n"
                    "}\n"
                    "\n"
                    "export function apiFetch(url: string, init: RequestInit = {}) {\n"
                    "  const headers = new Headers(init.headers);\n"
                    "  headers.set('X-CSRFToken', getCookie('csrftoken') ?? '');\n"
                    "  headers.set('Content-Type', 'application/json');\n"
                    "  return fetch(url, { ...init, headers, credentials: 'same-origin' });\n"
                    "}"
                ),
                "context": (
                    "frontend/src/api/client.ts: the one wrapper every mutation goes through"
                ),
            },
        ],
    },
    {
        "key": "drf-session-auth",
        "title": "React storefront authenticates with Django session cookies, not tokens",
        "content": (
            "The React app is served from the same origin as Django (/ and /api/ behind one "
            "nginx), so DRF uses SessionAuthentication for it; signing in is a POST to "
            "/api/auth/session/, which authenticates the customer and rotates the session key. "
            "TokenAuthentication is enabled only for the /api/partner/ endpoints used by the "
            "warehouse integration. Because everything is same-origin, CORS and "
            "django-cors-headers are not needed at all."
        ),
        "kind": "architecture",
        "confidence": "high",
        "source": "manual",
        "tags": ["django", "react", "auth"],
        "trade_offs": [
            {
                "type": "pro",
                "description": (
                    "HttpOnly cookie: JavaScript and XSS payloads cannot read the credential."
                ),
            },
            {
                "type": "pro",
                "description": (
                    "Logout and password change invalidate the session server-side at once."
                ),
            },
            {"type": "con", "description": "Every unsafe method needs the CSRF header."},
            {
                "type": "con",
                "description": (
                    "Frontend and API must stay on one origin (or share a parent domain)."
                ),
            },
        ],
    },
    {
        "key": "no-jwt-localstorage",
        "title": "Don't store JWT access tokens in localStorage for the storefront",
        "content": (
            "An early prototype stored a JWT in localStorage and attached it as `Authorization: "
            "Bearer`. Any XSS, for example through an unescaped product review, can read "
            "localStorage and send the token elsewhere, and ending the session cannot revoke it "
            "before `exp`. Use the HttpOnly Django session cookie instead; JavaScript never sees "
            "it."
        ),
        "kind": "anti_pattern",
        "confidence": "high",
        "source": "documented",
        "tags": ["auth", "security", "react"],
        "source_notes": "OWASP HTML5 Security Cheat Sheet, Local Storage section.",
    },
    {
        "key": "login-rate-limit",
        "title": "Throttle repeated failed sign-ins with django-axes",
        "content": (
            "Credential-stuffing bursts reached /api/auth/session/ at about 200 attempts per "
            "minute in March. We added django-axes with AXES_FAILURE_LIMIT = 5, AXES_COOLOFF_TIME "
            '= timedelta(minutes=15) and AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]], '
            "so one attacking IP cannot lock every customer's account. Alternatives considered: "
            "nginx limit_req alone (no per-username limit) and a CAPTCHA on every sign-in (cut "
            "checkout conversion by 4% in an A/B test)."
        ),
        "kind": "decision",
        "confidence": "medium",
        "source": "tested",
        "tags": ["auth", "security", "django"],
        "trade_offs": [
            {
                "type": "pro",
                "description": "Stops brute force per account without bothering normal users.",
            },
            {
                "type": "con",
                "description": (
                    "Adds an AxesBackend entry to AUTHENTICATION_BACKENDS and a table that grows; "
                    "run `axes_reset_logs` monthly."
                ),
            },
        ],
    },
    {
        "key": "password-hashers",
        "title": "Hash passwords with Argon2, placed first in PASSWORD_HASHERS",
        "content": (
            'Install with `pip install "django[argon2]"` and put '
            '"django.contrib.auth.hashers.Argon2PasswordHasher" first in PASSWORD_HASHERS, with '
            "PBKDF2PasswordHasher right after it so existing hashes are upgraded on the user's "
            "next sign-in. settings_test.py overrides PASSWORD_HASHERS with MD5PasswordHasher, "
            "which cut the test run by about 40 seconds; never copy that override anywhere else."
        ),
        "kind": "project_rule",
        "confidence": "high",
        "source": "documented",
        "tags": ["auth", "security", "django"],
        "file_types": ["py"],
    },
    {
        "key": "custom-user-model",
        "title": "Define the custom User model before the very first migration",
        "content": (
            'accounts.User(AbstractUser) with AUTH_USER_MODEL = "accounts.User" existed from '
            "migration 0001, even though it only makes email unique. Swapping the user model after "
            "auth tables exist means hand-editing migrations and the django_migrations table. "
            "Reference it through settings.AUTH_USER_MODEL in ForeignKeys and get_user_model() in "
            "code, never `from django.contrib.auth.models import User`."
        ),
        "kind": "architecture",
        "confidence": "very-high",
        "source": "documented",
        "tags": ["django", "auth", "python"],
        "file_types": ["py"],
    },
    # -------------------- git
    {
        "key": "never-force-push-shared",
        "title": "Never force-push to develop, main or other shared branches",
        "content": (
            "A `git push --force` to develop in sprint 14 dropped two commits from other "
            "developers, and the staging deploy shipped without them. On branches other people "
            "pull from, undo mistakes with `git revert <sha>` or a follow-up commit. main and "
            "release/* are protected on the forge, but develop and shared feature branches are "
            "not, so this is on us."
        ),
        "kind": "project_rule",
        "confidence": "very-high",
        "source": "correction",
        "tags": ["git", "workflow"],
        "when_not_to_apply": "Your own feature branch that nobody else has checked out.",
        "contexts": ["shared team branch", "hotfix"],
        "anti_contexts": ["personal feature branch"],
        "evidence": [
            {
                "quote": "never force push develop again. if something is wrong, revert it",
                "session_id": "demo-session-2",
            },
        ],
    },
    {
        "key": "force-with-lease-personal",
        "title": "Force-push with --force-with-lease after rebasing your own branch",
        "content": (
            "On a personal feature branch nobody else commits to, rebase on origin/main and fold "
            "fixups with `git rebase -i --autosquash origin/main`, then push with `git push "
            "--force-with-lease`. Unlike --force, --force-with-lease refuses when the remote moved "
            "since your last fetch, so a surprise commit from CI or a reviewer's suggestion is not "
            "overwritten."
        ),
        "kind": "pattern",
        "confidence": "high",
        "source": "tested",
        "tags": ["git", "workflow"],
        "contexts": ["personal feature branch"],
        "anti_contexts": ["shared team branch"],
        "examples": [
            {
                "language": "bash",
                "code": (
                    "git fetch origin\n"
                    "git commit --fixup=HEAD~2          # small correction to an earlier commit\n"
                    "git rebase -i --autosquash origin/main\n"
                    "git push --force-with-lease origin feature/wishlist"
                ),
                "context": "Tidying a personal branch before asking for review",
            },
        ],
    },
    {
        "key": "small-commits",
        "title": "Make small focused commits instead of one commit per feature",
        "content": (
            "Split work into commits that each do one thing and leave the suite green: the "
            "migration, then the model change, then the API, then the React component. Reviewers "
            "on acme-shop read commit by commit, and `git bisect` only helps when each commit is "
            "small enough to reason about. Use `git add -p` to stage hunk by hunk."
        ),
        "kind": "preference",
        "confidence": "high",
        "source": "preference",
        "tags": ["git", "workflow"],
        "preference": {
            "context": "Committing the multi-day wishlist feature",
            "rejected": "One 1,800-line commit titled 'add wishlist'",
            "preferred": "Five to ten commits, each building and passing tests on its own",
            "reasoning": (
                "Reviewable in pieces, revertable in pieces, and git bisect lands on a small diff."
            ),
        },
        "evidence": [
            {
                "quote": (
                    "please don't dump everything in one giant commit, split it up so I can review "
                    "it"
                ),
                "session_id": "demo-session-3",
            },
        ],
    },
    {
        "key": "conventional-commits",
        "title": "Commit messages follow Conventional Commits with the ticket id",
        "content": (
            "Subjects look like `feat(cart): apply coupon before tax (ACME-412)`; allowed types "
            "are feat, fix, refactor, perf, test, docs and chore. The release script builds "
            "CHANGELOG.md from them with git-cliff, so the commit-msg hook runs commitlint and "
            "rejects a malformed subject. Subjects stay under 72 characters; the body explains the "
            "why."
        ),
        "kind": "project_rule",
        "confidence": "high",
        "source": "manual",
        "tags": ["git", "workflow"],
    },
    {
        "key": "hotfix-from-tag",
        "title": "Cut hotfix branches from the release tag, then cherry-pick to main",
        "content": (
            "For a production bug, branch from the deployed tag (`git switch -c hotfix/1.14.1 "
            "v1.14.0`), not from main, which may already contain unreleased migrations. Tag "
            "v1.14.1 once CI passes, deploy it, then `git cherry-pick -x <sha>` the fix onto main "
            "so the next release carries it."
        ),
        "kind": "project_rule",
        "confidence": "high",
        "source": "manual",
        "tags": ["git", "deploy"],
        "contexts": ["hotfix", "production deploy"],
    },
    # -------------------- testing
    {
        "key": "real-test-postgres",
        "title": "Run the test suite against a real Postgres, never mock the ORM",
        "content": (
            "Tests exercise a genuine Postgres 16 database instead of mocked ORM calls: "
            "pytest-django connects to the container started by `docker compose up -d db-test` "
            "(port 5433), the same major version as production. Mocking the ORM or QuerySets was "
            "rejected: it let a broken unique constraint and a JSONField lookup ship. Locally use "
            "`pytest --reuse-db` so a run takes under a minute; CI creates a fresh database every "
            "time."
        ),
        "kind": "preference",
        "confidence": "very-high",
        "source": "correction",
        "tags": ["testing", "postgres", "django"],
        "file_types": ["py"],
        "contexts": ["local development"],
        "preference": {
            "context": "Writing tests for the order and cart services",
            "rejected": "unittest.mock patches of Order.objects and QuerySet chains",
            "preferred": "A real Postgres test database via pytest-django and docker compose",
            "reasoning": (
                "Mocks only assert what we believe the ORM does; constraints, JSONB lookups and "
                "transaction semantics show up only on the real engine."
            ),
        },
        "evidence": [
            {
                "quote": (
                    "no mocking the db please. spin up the test postgres in docker and hit it for "
                    "real"
                ),
                "session_id": "demo-session-4",
            },
        ],
    },
    {
        "key": "mock-orm-anti",
        "title": "Mocking the ORM in tests masks broken SQL",
        "content": (
            'Tests that did `mocker.patch("orders.services.Order.objects")` kept passing while the '
            "real query used a field renamed two weeks earlier; production then raised "
            "`FieldError: Cannot resolve keyword 'shipped' into field`. A MagicMock accepts any "
            "chain of .filter().exclude().annotate(), so it checks nothing about the schema. "
            "Create rows with factories and query the real test Postgres instead."
        ),
        "kind": "anti_pattern",
        "confidence": "high",
        "source": "observed",
        "tags": ["testing", "django", "python"],
        "file_types": ["py"],
    },
    {
        "key": "factory-boy",
        "title": "Build test data with factory_boy factories, not JSON fixtures",
        "content": (
            "JSON fixtures under fixtures/*.json broke every time a model gained a non-null field. "
            "Each app now has tests/factories.py with DjangoModelFactory classes (UserFactory, "
            "ProductFactory, OrderFactory with a SubFactory for the customer), and each test "
            'creates exactly the rows it needs, e.g. `OrderFactory(status="paid", items__count=3)`.'
        ),
        "kind": "code_pattern",
        "confidence": "high",
        "source": "tested",
        "tags": ["testing", "django", "python"],
        "file_types": ["py"],
    },
    {
        "key": "sqlite-varchar",
        "title": "SQLite tests missed a varchar overflow that Postgres rejects",
        "content": (
            "settings_test.py once used SQLite to speed up CI. SQLite ignores max_length, so "
            "importing supplier SKUs of up to 80 characters into Product.sku = "
            "CharField(max_length=64) passed every test, and the nightly import in production "
            "failed with `django.db.utils.DataError: value too long for type character "
            "varying(64)`. Tests now run on Postgres only and the column was widened to 100 in "
            "migration catalog/0042."
        ),
        "kind": "bug_fix",
        "confidence": "high",
        "source": "observed",
        "tags": ["testing", "postgres", "django"],
    },
    {
        "key": "rtl-queries",
        "title": "Query React Testing Library elements by role and label",
        "content": (
            'Component tests use `screen.getByRole("button", { name: /add to cart/i })` and '
            '`getByLabelText("Email")` instead of `container.querySelector(".btn-primary")` or '
            "data-testid, so they fail when the UI becomes inaccessible rather than when a class "
            "name changes. Use `const user = userEvent.setup()` and `await user.click(...)` "
            "instead of fireEvent; it dispatches the full pointer and keyboard sequence."
        ),
        "kind": "code_pattern",
        "confidence": "high",
        "source": "documented",
        "tags": ["react", "testing"],
        "file_types": ["tsx", "ts"],
    },
    # -------------------- react and css
    {
        "key": "hooks-not-classes",
        "title": "Write function components with hooks, no new class components",
        "content": (
            "All new React code in frontend/src is function components using hooks (useState, "
            "useEffect, useReducer, custom hooks in src/hooks). The remaining class components "
            "(LegacyCheckoutForm, ProductCarousel) are converted only when touched for other "
            "reasons. ErrorBoundary stays a class because React has no hook equivalent of "
            "componentDidCatch."
        ),
        "kind": "preference",
        "confidence": "very-high",
        "source": "preference",
        "tags": ["react", "frontend"],
        "file_types": ["tsx", "ts"],
        "preference": {
            "context": "Adding the wishlist drawer component",
            "rejected": "class WishlistDrawer extends React.Component with componentDidMount",
            "preferred": (
                "function WishlistDrawer() with useState/useEffect and a useWishlist() custom hook"
            ),
            "reasoning": (
                "Matches the rest of the codebase, logic is reusable as hooks, and less "
                "boilerplate."
            ),
        },
        "evidence": [
            {
                "quote": "we don't write class components anymore, use hooks",
                "session_id": "demo-session-5",
            },
        ],
    },
    {
        "key": "useeffect-race",
        "title": "Abort stale fetches in useEffect so racing search responses never win",
        "content": (
            "Typing 'shoes' quickly in the product search sent five requests; the late response "
            "for 'sh' arrived last and replaced the results for 'shoes'. Each effect now creates "
            "an AbortController, passes its signal to fetch and calls controller.abort() in the "
            "cleanup, ignoring AbortError. The same cleanup also covers React 18 StrictMode "
            "running effects twice in development."
        ),
        "kind": "bug_fix",
        "confidence": "high",
        "source": "tested",
        "tags": ["react", "frontend"],
        "file_types": ["tsx", "ts"],
        "examples": [
            {
                "language": "tsx",
                "code": (
                    "useEffect(() => {\n"
                    "  const controller = new AbortController();\n"
                    "  fetch(`/api/products/?q=${encodeURIComponent(q)}`, { signal: "
                    "controller.signal })\n"
                    "    .then((r) => r.json())\n"
                    "    .then(setResults)\n"
                    "    .catch((e) => { if (e.name !== 'AbortError') throw e; });\n"
                    "  return () => controller.abort();\n"
                    "}, [q]);"
                ),
                "context": "ProductSearch.tsx",
            },
        ],
    },
    {
        "key": "react-query",
        "title": "Use TanStack Query for server data instead of Redux",
        "content": (
            "Product, cart and order data comes from the API, so it lives in TanStack Query "
            "(useQuery/useMutation) with a staleTime of 30 s for catalog data. Redux Toolkit was "
            "removed in v1.9, deleting about 600 lines of slices and thunks. Purely visual flags "
            "(drawer open, selected tab) use useState or useReducer. Mutations go through the "
            "shared apiFetch wrapper so the CSRF header is always attached."
        ),
        "kind": "decision",
        "confidence": "high",
        "source": "manual",
        "tags": ["react", "frontend"],
        "trade_offs": [
            {
                "type": "pro",
                "description": "Caching, deduplication, retries and request cancellation for free.",
            },
            {"type": "pro", "description": "Far less boilerplate than Redux slices and thunks."},
            {
                "type": "con",
                "description": (
                    "Cache keys must be designed carefully or invalidation misses screens."
                ),
            },
        ],
    },
    {
        "key": "css-modules",
        "title": "Style components with CSS Modules and shared design tokens",
        "content": (
            "Each component has a sibling Component.module.css; the only global styles are in "
            "src/styles/reset.css. Colors, spacing and radii come from custom properties in "
            "src/styles/tokens.css (var(--color-brand-600), var(--space-3)), and stylelint's "
            "color-no-hex rule fails CI on hard-coded hex values."
        ),
        "kind": "project_rule",
        "confidence": "high",
        "source": "manual",
        "tags": ["css", "react", "frontend"],
        "file_types": ["css", "tsx"],
    },
    {
        "key": "safari-100vh",
        "title": "iOS Safari cut off the sticky checkout bar; use dvh units",
        "content": (
            "The checkout layout used `min-height: 100vh` with a position: sticky 'Place order' "
            "bar at the bottom. On iOS Safari 100vh is the height with the address bar collapsed, "
            "so the bar sat under the Safari toolbar until the customer scrolled. Fix: declare "
            "`min-height: 100vh` then `min-height: 100dvh` (Safari 15.4+, Chrome 108+) and add "
            "`padding-bottom: env(safe-area-inset-bottom)`."
        ),
        "kind": "bug_fix",
        "confidence": "high",
        "source": "tested",
        "tags": ["css", "frontend"],
        "file_types": ["css"],
        "examples": [
            {
                "language": "css",
                "code": (
                    ".checkoutPage {\n"
                    "  min-height: 100vh;   /* fallback for old engines */\n"
                    "  min-height: 100dvh;  /* tracks the visible viewport */\n"
                    "}\n"
                    ".orderBar {\n"
                    "  position: sticky;\n"
                    "  bottom: 0;\n"
                    "  padding-bottom: env(safe-area-inset-bottom);\n"
                    "}"
                ),
                "context": "Checkout.module.css",
            },
        ],
    },
    # -------------------- python and django
    {
        "key": "logging-not-print",
        "title": "Use the logging module instead of print() for debugging",
        "content": (
            "Debug output goes through a module-level `logger = logging.getLogger(__name__)` and "
            'calls like `logger.debug("coupon %s applied to cart %s", code, cart.id)` with lazy '
            "%-formatting. print() output vanishes under gunicorn and was committed twice, so "
            "pre-commit runs ruff rule T201 to reject it. The LOGGING setting sends acme.* at "
            "DEBUG to the console locally and at INFO as JSON lines in production."
        ),
        "kind": "preference",
        "confidence": "high",
        "source": "correction",
        "tags": ["python", "django", "logging"],
        "file_types": ["py"],
        "preference": {
            "context": "Diagnosing why a coupon was not applied to a cart",
            "rejected": "print() statements sprinkled through orders/services.py",
            "preferred": "A module-level logger with logger.debug/info, levels set in LOGGING",
            "reasoning": (
                "Survives in production logs, can be switched on per module, and never leaks into "
                "commits."
            ),
        },
        "evidence": [
            {
                "quote": "stop adding prints, use the logger. prints always end up in commits",
                "session_id": "demo-session-6",
            },
        ],
    },
    {
        "key": "money-decimal",
        "title": "Prices are Decimal end to end; float is banned for currency",
        "content": (
            "Prices, totals, tax and discounts use models.DecimalField(max_digits=12, "
            "decimal_places=2) and decimal.Decimal in Python code. A float discount calculation "
            "produced 19.989999999999998 and a cart total one cent off on 3 of 1,000 orders. Build "
            "Decimals from strings, never from floats, and quantize once at the end."
        ),
        "kind": "project_rule",
        "confidence": "very-high",
        "source": "tested",
        "tags": ["python", "django", "postgres"],
        "file_types": ["py"],
        "examples": [
            {
                "language": "python",
                "code": (
                    "from decimal import Decimal, ROUND_HALF_UP\n"
                    "\n"
                    'CENT = Decimal("0.01")\n'
                    "\n"
                    "def line_total(unit_price: Decimal, qty: int, discount_pct: Decimal) -> "
                    "Decimal:\n"
                    "    gross = unit_price * qty\n"
                    "    net = gross * (Decimal(1) - discount_pct / 100)\n"
                    "    return net.quantize(CENT, rounding=ROUND_HALF_UP)"
                ),
                "context": "orders/pricing.py",
            },
        ],
    },
    {
        "key": "n-plus-one",
        "title": "Fix N+1 queries in order serializers with select_related",
        "content": (
            "The /api/orders/ endpoint ran 312 SQL queries for 100 orders because the serializer "
            "touched order.customer and order.items for each row. Adding "
            '.select_related("customer").prefetch_related("items__product") to the viewset '
            "queryset brought it to 3 queries and p95 latency from 1.8 s to 140 ms. Regressions "
            "are caught with the django_assert_num_queries fixture in pytest."
        ),
        "kind": "bug_fix",
        "confidence": "high",
        "source": "tested",
        "tags": ["django", "postgres", "performance"],
        "file_types": ["py"],
    },
    {
        "key": "env-settings",
        "title": "One settings.py driven by environment variables, not per-env files",
        "content": (
            "acme_shop/settings.py reads everything that differs per machine from the environment "
            'with django-environ: `DEBUG = env.bool("DEBUG", default=False)`, `DATABASES = '
            '{"default": env.db("DATABASE_URL")}`. Local values sit in an untracked .env (copy '
            ".env.example); production gets them from the systemd EnvironmentFile. SECRET_KEY has "
            "no default, so a missing variable fails at startup with ImproperlyConfigured instead "
            "of running insecurely."
        ),
        "kind": "preference",
        "confidence": "high",
        "source": "preference",
        "tags": ["django", "deploy", "security", "python"],
        "file_types": ["py"],
        "preference": {
            "context": "Adding a staging environment",
            "rejected": "settings/base.py plus dev.py, staging.py and prod.py with star imports",
            "preferred": "A single settings.py reading environment variables via django-environ",
            "reasoning": (
                "One file to read, no drift between copies, and secrets never land in git."
            ),
        },
        "evidence": [
            {
                "quote": "no more settings files per environment, just read env vars",
                "session_id": "demo-session-7",
            },
        ],
    },
    # -------------------- deploy and postgres
    {
        "key": "expand-contract",
        "title": "Ship schema changes in two releases: expand first, contract later",
        "content": (
            "Migrations run in the release step (`python manage.py migrate --noinput`) before "
            "gunicorn reloads, so for a few seconds old code runs against the new schema. A "
            "release may therefore only add nullable columns, tables or indexes; dropping or "
            "renaming a column waits for the following release, once no code reads it. CI runs "
            "`python manage.py makemigrations --check --dry-run` to catch missing migrations."
        ),
        "kind": "project_rule",
        "confidence": "high",
        "source": "manual",
        "tags": ["deploy", "django", "postgres"],
        "contexts": ["production deploy"],
        "anti_contexts": ["local development"],
        "when_not_to_apply": "A local database you can drop and recreate at will.",
    },
    {
        "key": "add-index-concurrently",
        "title": "Create indexes concurrently on big tables to avoid blocking writes",
        "content": (
            "A plain AddIndex on orders_order (4.2M rows) took a SHARE lock and blocked every "
            "INSERT and UPDATE, so checkout was down for 3 min 40 s during the v1.12 deploy. Use "
            "django.contrib.postgres.operations.AddIndexConcurrently in a migration with `atomic = "
            "False`. If it fails midway Postgres leaves an INVALID index: drop it with DROP INDEX "
            "CONCURRENTLY and run the migration again."
        ),
        "kind": "learning",
        "confidence": "very-high",
        "source": "observed",
        "tags": ["postgres", "deploy", "django"],
        "contexts": ["production deploy"],
        "file_types": ["py"],
        "examples": [
            {
                "language": "python",
                "code": (
                    "from django.contrib.postgres.operations import AddIndexConcurrently\n"
                    "from django.db import migrations, models\n"
                    "\n"
                    "\n"
                    "class Migration(migrations.Migration):\n"
                    "    atomic = False\n"
                    '    dependencies = [("orders", "0031_order_shipped_at")]\n'
                    "    operations = [\n"
                    "        AddIndexConcurrently(\n"
                    '            model_name="order",\n'
                    '            index=models.Index(fields=["customer", "-created_at"], '
                    'name="order_cust_created_idx"),\n'
                    "        ),\n"
                    "    ]"
                ),
                "context": "orders/migrations/0032_order_cust_created_idx.py",
            },
        ],
        "trade_offs": [
            {"type": "pro", "description": "Reads and writes continue while the index builds."},
            {
                "type": "con",
                "description": "Slower (two table scans) and cannot run inside a transaction.",
            },
            {
                "type": "con",
                "description": (
                    "A failed build leaves an INVALID index that must be dropped by hand."
                ),
            },
        ],
    },
]

LINKS: list[tuple[str, str, str]] = [
    # auth / sessions cluster
    ("file-sessions", "redis-sessions-old", "supersedes"),
    ("session-cleanup", "file-sessions", "derived_from"),
    ("session-cookie-flags", "file-sessions", "related_to"),
    ("drf-session-auth", "file-sessions", "related_to"),
    ("csrf-react-fetch", "drf-session-auth", "prerequisite"),
    ("no-jwt-localstorage", "drf-session-auth", "alternative"),
    ("login-rate-limit", "drf-session-auth", "related_to"),
    ("drf-session-auth", "custom-user-model", "prerequisite"),
    ("password-hashers", "custom-user-model", "related_to"),
    ("session-cookie-flags", "env-settings", "related_to"),
    # react chain into the auth cluster
    ("useeffect-race", "hooks-not-classes", "derived_from"),
    ("react-query", "useeffect-race", "alternative"),
    ("react-query", "csrf-react-fetch", "related_to"),
    ("rtl-queries", "hooks-not-classes", "related_to"),
    ("safari-100vh", "css-modules", "related_to"),
    # testing
    ("mock-orm-anti", "real-test-postgres", "related_to"),
    ("sqlite-varchar", "real-test-postgres", "example_of"),
    ("factory-boy", "mock-orm-anti", "alternative"),
    # git
    ("force-with-lease-personal", "never-force-push-shared", "contradicts"),
    ("force-with-lease-personal", "small-commits", "related_to"),
    ("conventional-commits", "small-commits", "related_to"),
    ("hotfix-from-tag", "never-force-push-shared", "related_to"),
    # deploy and logging
    ("hotfix-from-tag", "expand-contract", "related_to"),
    ("add-index-concurrently", "expand-contract", "derived_from"),
    ("n-plus-one", "logging-not-print", "related_to"),
]

QUERIES: list[dict] = [
    {
        "query": "where should we keep login state between page loads",
        "note": (
            "A paraphrase with no words in common with the lesson: only semantic search finds the "
            "file-sessions preference."
        ),
        "expect_key": "file-sessions",
    },
    {
        "query": "CSRF Failed: CSRF token missing or incorrect.",
        "note": (
            "An exact error message pasted from the browser console: keyword search matches it "
            "directly."
        ),
        "expect_key": "csrf-react-fetch",
    },
    {
        "query": "is it ok to rewrite history after rebasing my own branch",
        "note": (
            "With the context filter, the 'never force-push' rule (anti-context: personal feature "
            "branch) is left out and the force-with-lease lesson remains."
        ),
        "expect_key": "force-with-lease-personal",
        "filters": {
            "contexts": ["personal feature branch"],
        },
    },
    {
        "query": "mobile browser hides the pay button below the screen edge",
        "note": (
            "Describes the symptom in a user's words; semantic search connects it to the iOS "
            "Safari dvh fix."
        ),
        "expect_key": "safari-100vh",
    },
    {
        "query": "is it fine to stub out persistence when verifying behaviour",
        "note": (
            "Two lessons say the same thing in different words (a preference and an anti-pattern); "
            "both come back."
        ),
        "expect_key": "real-test-postgres",
    },
    {
        "query": "how do I handle money without losing pennies",
        "note": "Everyday wording for a currency-precision rule that never uses these words.",
        "expect_key": "money-decimal",
    },
    {
        "query": "the listing view is slow and fires hundreds of little round trips",
        "note": (
            "A performance symptom described loosely; semantic search finds the N+1 select_related "
            "fix."
        ),
        "expect_key": "n-plus-one",
    },
]
