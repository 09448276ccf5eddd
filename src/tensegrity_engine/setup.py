"""ament_python / pip package of the tensegrity engine (pure Python, no ROS import)."""
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "tensegrity_engine"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    package_data={PACKAGE: ["models/*.yaml", "models/gaits/*.yaml"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/models", glob(f"{PACKAGE}/models/*.yaml")),
        (f"share/{PACKAGE}/models/gaits", glob(f"{PACKAGE}/models/gaits/*.yaml")),
    ],
    python_requires=">=3.10",
    install_requires=["numpy>=1.24", "scipy>=1.10", "numba>=0.58", "pyyaml>=6", "matplotlib>=3.6", "tqdm>=4.60"],
    zip_safe=False,
    maintainer="tensegrity-ros maintainers",
    maintainer_email="maintainers@tensegrity-ros.invalid",
    description="Tensegrity dynamics, equilibrium and geometry engine",
    license="Apache-2.0",
    extras_require={"test": ["pytest"],        # colcon test finds pytest here (tests_require is gone in setuptools 72+)
                    "learn": ["gymnasium>=1.0"]},   # tensegrity_engine.learn: the learning environments
    entry_points={"console_scripts": ["tensegrity = tensegrity_engine.cli:main"]},
)
