package pyscan

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
)

// Version identifies the scanner and its tables. Bump it when a change can
// alter what Distributions returns for the same source: it belongs in the
// cache key of anything derived from a scan.
const Version = "1"

// renamed maps import names (dotted for namespace packages) to the
// distribution that provides them, where the two differ. Only mappings that
// are unambiguous in practice belong here; anything doubtful is left to the
// model via the unknown list.
var renamed = map[string]string{
	"Bio":                    "biopython",
	"Crypto":                 "pycryptodome",
	"Cryptodome":             "pycryptodomex",
	"MySQLdb":                "mysqlclient",
	"OpenSSL":                "pyOpenSSL",
	"PIL":                    "Pillow",
	"_pytest":                "pytest",
	"attr":                   "attrs",
	"bs4":                    "beautifulsoup4",
	"community":              "python-louvain",
	"cv2":                    "opencv-python",
	"dateutil":               "python-dateutil",
	"dns":                    "dnspython",
	"docx":                   "python-docx",
	"dotenv":                 "python-dotenv",
	"faiss":                  "faiss-cpu",
	"fitz":                   "PyMuPDF",
	"fpdf":                   "fpdf2",
	"git":                    "GitPython",
	"github":                 "PyGithub",
	"google.auth":            "google-auth",
	"google.cloud.bigquery":  "google-cloud-bigquery",
	"google.cloud.storage":   "google-cloud-storage",
	"google.protobuf":        "protobuf",
	"googleapiclient":        "google-api-python-client",
	"jose":                   "python-jose",
	"jwt":                    "PyJWT",
	"kafka":                  "kafka-python",
	"magic":                  "python-magic",
	"mpl_toolkits":           "matplotlib",
	"multipart":              "python-multipart",
	"nacl":                   "PyNaCl",
	"odf":                    "odfpy",
	"osgeo":                  "GDAL",
	"pdfminer":               "pdfminer.six",
	"pkg_resources":          "setuptools",
	"pptx":                   "python-pptx",
	"psycopg2":               "psycopg2-binary",
	"pythonjsonlogger":       "python-json-logger",
	"ruamel.yaml":            "ruamel.yaml",
	"serial":                 "pyserial",
	"shapefile":              "pyshp",
	"skimage":                "scikit-image",
	"sklearn":                "scikit-learn",
	"slugify":                "python-slugify",
	"socketio":               "python-socketio",
	"telegram":               "python-telegram-bot",
	"umap":                   "umap-learn",
	"usb":                    "pyusb",
	"websocket":              "websocket-client",
	"yaml":                   "PyYAML",
	"zmq":                    "pyzmq",
	"sentence_transformers":  "sentence-transformers",
	"charset_normalizer":     "charset-normalizer",
	"typing_extensions":      "typing-extensions",
	"pytest_mock":            "pytest-mock",
	"requests_mock":          "requests-mock",
	"pytest_asyncio":         "pytest-asyncio",
	"numpy_financial":        "numpy-financial",
	"google.generativeai":    "google-generativeai",
	"google.cloud.pubsub_v1": "google-cloud-pubsub",
}

// identical lists distributions whose import name is their name (pip
// compares names case-insensitively, so "sqlalchemy" and "SQLAlchemy" agree).
// pytest is here on purpose: the sandbox installs it anyway, but a test file
// that imports it still reports it, so the package list stays an honest
// account of what the code needs and a builder can dedupe it.
var identical = map[string]bool{
	"aiohttp": true, "arrow": true, "babel": true, "boto3": true, "botocore": true,
	"bokeh": true, "catboost": true, "certifi": true, "chardet": true, "click": true,
	"cryptography": true, "dask": true, "dateparser": true, "duckdb": true, "emoji": true,
	"faker": true, "fastapi": true, "fiona": true, "flask": true, "folium": true,
	"freezegun": true, "fsspec": true, "geopandas": true, "gensim": true, "h5py": true,
	"html5lib": true, "httpx": true, "hypothesis": true, "idna": true, "jinja2": true,
	"joblib": true, "jsonschema": true, "keras": true, "lightgbm": true, "lxml": true,
	"markdown": true, "markupsafe": true, "matplotlib": true, "mock": true, "msgpack": true,
	"netCDF4": true, "networkx": true, "nltk": true, "numba": true, "numexpr": true,
	"numpy": true, "openpyxl": true, "Levenshtein": true, "orjson": true, "packaging": true,
	"pandas": true, "paramiko": true, "pdfplumber": true, "pendulum": true, "phonenumbers": true,
	"plotly": true, "polars": true, "psutil": true, "pyarrow": true, "pycountry": true,
	"pydantic": true, "pymongo": true, "pymysql": true, "pypdf": true, "PyPDF2": true,
	"pyparsing": true, "pyproj": true, "pytest": true, "pytz": true, "rapidfuzz": true,
	"rasterio": true, "redis": true, "regex": true, "reportlab": true, "requests": true,
	"responses": true, "rich": true, "scipy": true, "scrapy": true, "seaborn": true,
	"selenium": true, "setuptools": true, "shapely": true, "simplejson": true, "six": true,
	"spacy": true, "sqlalchemy": true, "sqlparse": true, "statsmodels": true, "sympy": true,
	"tables": true, "tabulate": true, "tenacity": true, "tensorflow": true, "thefuzz": true,
	"toml": true, "tomli": true, "tomlkit": true, "toolz": true, "torch": true,
	"torchvision": true, "tqdm": true, "transformers": true, "typer": true, "tzdata": true,
	"tzlocal": true, "ujson": true, "unidecode": true, "urllib3": true, "xarray": true,
	"xgboost": true, "xlrd": true, "xlsxwriter": true, "xmltodict": true, "zstandard": true,
}

// namespaceRoots are top-level names shared by unrelated distributions: an
// unknown import under one of them is reported by its full path, so the
// model can tell google.cloud.storage from google.protobuf.
var namespaceRoots = map[string]bool{
	"azure": true, "backports": true, "google": true, "jaraco": true, "ruamel": true, "zope": true,
}

// alwaysLocal are the module names of the generated files themselves.
var alwaysLocal = [...]string{protocol.SolutionModule, protocol.TestModule, "conftest", "__main__"}

// Set is a set of top-level module names. A nil Set is empty.
type Set map[string]struct{}

// NewSet returns a set of the given names.
func NewSet(names ...string) Set {
	s := make(Set, len(names))
	for _, n := range names {
		s[n] = struct{}{}
	}
	return s
}

// Has reports whether the top-level part of module is in the set, so
// Has("os.path") is true when "os" is.
func (s Set) Has(module string) bool {
	_, ok := s[topLevel(module)]
	return ok
}

// Stdlib returns the standard library of CPython 3.11 (its
// sys.stdlib_module_names). Use StdlibFrom for the target interpreter's own
// list when one can be run.
func Stdlib() Set { return NewSet(stdlib311[:]...) }

// stdlibSet is the read-only set behind the zero Resolver.
var stdlibSet = Stdlib()

// Distribution returns the distribution that provides module (dotted or
// top-level) if the tables can vouch for it: a known rename such as
// sklearn -> scikit-learn, or a known package whose import name is its
// distribution name. The longest dotted prefix in the rename table wins.
func Distribution(module string) (string, bool) {
	parts := strings.Split(module, ".")
	for n := len(parts); n > 0; n-- {
		if d, ok := renamed[strings.Join(parts[:n], ".")]; ok {
			return d, true
		}
	}
	if identical[parts[0]] {
		return parts[0], true
	}
	// Case-insensitive lookup: `import Flask` is wrong Python, but a model
	// listing "Flask" as a package means the flask distribution.
	for name, ok := range identical {
		if ok && strings.EqualFold(name, parts[0]) {
			return name, true
		}
	}
	return "", false
}

// Resolver maps imported modules to distributions. The zero value uses the
// CPython 3.11 standard library and no extra local modules.
type Resolver struct {
	// Stdlib is the target interpreter's standard library; nil means Stdlib().
	Stdlib Set
	// Local lists modules that belong to the job itself (besides solution,
	// test_solution and conftest, which always do). "helpers.py" and
	// "helpers" are the same.
	Local []string
}

// Distributions resolves imports with the default Resolver and the given
// local modules. See (Resolver).Distributions.
func Distributions(imports []string, local []string) (dists []string, unknown []string) {
	return Resolver{Local: local}.Distributions(imports)
}

// Distributions returns the distributions that provide imports (module
// names, dotted or top-level, as from Modules or Imports), leaving out the
// standard library, the job's own modules and relative imports. Imports it
// cannot vouch for are returned in unknown (top-level name, or the full path
// under a namespace package such as google) for the model to resolve. Both
// lists are sorted and without duplicates; pytest is reported like any other
// distribution (see identical).
func (r Resolver) Distributions(imports []string) (dists []string, unknown []string) {
	std := r.Stdlib
	if std == nil {
		std = stdlibSet
	}
	local := NewSet(alwaysLocal[:]...)
	for _, l := range r.Local {
		local[strings.TrimSuffix(strings.TrimSpace(l), ".py")] = struct{}{}
	}
	ds, us := map[string]bool{}, map[string]bool{}
	for _, m := range imports {
		m = strings.TrimSpace(m)
		if m == "" || strings.HasPrefix(m, ".") || local.Has(m) || std.Has(m) {
			continue
		}
		if d, ok := Distribution(m); ok {
			ds[d] = true
			continue
		}
		if namespaceRoots[topLevel(m)] {
			us[m] = true
		} else {
			us[topLevel(m)] = true
		}
	}
	dists, unknown = slices.Sorted(maps.Keys(ds)), slices.Sorted(maps.Keys(us))
	sort.Slice(dists, func(i, j int) bool { return strings.ToLower(dists[i]) < strings.ToLower(dists[j]) })
	return dists, unknown
}
