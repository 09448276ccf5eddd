"""ament_python / pip package: launch files, configs, URDF (from the repository's top-level launch/,
config/, urdf/) and the pip-only ``tensegrity-bringup`` entry point."""
import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "tensegrity_bringup"
HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.relpath(os.path.join(HERE, "..", ".."), HERE)   # the repository root (launch/, config/, urdf/)


def top_level(folder, pattern):
    return sorted(glob(os.path.join(TOP, folder, pattern)))


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", top_level("launch", "*.launch.py")),
        (f"share/{PACKAGE}/config", top_level("config", "*.yaml") + top_level("config", "*.rviz")),
        (f"share/{PACKAGE}/config/policies", top_level("config/policies", "*.npz")),
        (f"share/{PACKAGE}/urdf", top_level("urdf", "*.urdf")),
    ],
    python_requires=">=3.10",
    install_requires=["mcap-ros2-support>=0.5", "tensegrity_engine", "tensegrity_ros_common", "tensegrity_sim",
                      "tensegrity_monitor"],
    zip_safe=False,
    maintainer="tensegrity-ros maintainers",
    maintainer_email="maintainers@tensegrity-ros.invalid",
    description="Launch files, configs, URDF and the pip-only bringup of the tensegrity suite",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},      # colcon test finds pytest here (tests_require is gone in setuptools 72+)
    entry_points={"console_scripts": ["tensegrity-bringup = tensegrity_bringup.bringup:main"]},
)
